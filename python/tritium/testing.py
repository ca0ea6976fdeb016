"""Testing helpers (`tritium.testing`), as in `triton.testing`."""

import sys

__all__ = ["assert_close"]


def _to_numpy(x):
    import numpy as np  # noqa: PLC0415
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        if x.dtype in (torch.bfloat16,) or str(x.dtype).startswith("torch.float8"):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Asserts that x and y (torch tensors, numpy arrays or scalars) are equal
    within atol + rtol * |y| elementwise; NaNs must match. Defaults as in
    Triton: atol=1e-2, rtol=0."""
    import numpy as np  # noqa: PLC0415
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    a, b = _to_numpy(x), _to_numpy(y)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind == "f" else a,
                               b.astype(np.float64) if b.dtype.kind == "f" else b,
                               atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
