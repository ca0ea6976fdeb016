"""Host-side helpers (`tritium.tools`, as `triton.tools`)."""
