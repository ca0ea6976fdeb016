// Shared-memory layouts against brute force: each layout's linear map and its
// inverse are checked at every offset of the tile against the offset that the
// swizzle formula gives, written here independently of the layouts' code
// (for NVMMA, on byte addresses, as PTX describes its 32/64/128B swizzles).
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/shared_layouts.h"
#include "tritium/ir/printer.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tritium;
using namespace tritium::gpu;

namespace {

using Coord = std::vector<int64_t>;

/// Every coordinate of a tile of `shape`, row-major.
std::vector<Coord> allCoords(const std::vector<int64_t> &shape) {
  std::vector<Coord> out{Coord(shape.size(), 0)};
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<Coord> next;
    for (const Coord &c : out)
      for (int64_t v = 0; v < shape[d]; ++v) {
        Coord n = c;
        n[d] = v;
        next.push_back(n);
      }
    out = std::move(next);
  }
  return out;
}

/// Element offset of `c` in a swizzled_shared buffer: dims stored in
/// `order`; in the plane of the two fastest, row r keeps column group g at
/// g XOR ((r / perPhase) % maxPhase), wrapped to the row's groups.
int64_t swizzledOffset(const Coord &c, const std::vector<int64_t> &shape,
                       int64_t vec, int64_t perPhase, int64_t maxPhase,
                       const std::vector<int64_t> &order) {
  int64_t col = c[order[0]], numCols = shape[order[0]];
  int64_t colOut = col;
  if (order.size() >= 2) {
    int64_t row = c[order[1]];
    int64_t phase = (row / perPhase) % maxPhase;
    int64_t groups = std::max<int64_t>(1, numCols / vec);
    colOut = (((col / vec) ^ phase) % groups) * vec + col % vec;
  }
  int64_t off = 0, stride = 1;
  for (size_t k = 0; k < order.size(); ++k) {
    off += (k == 0 ? colOut : c[order[k]]) * stride;
    stride *= shape[order[k]];
  }
  return off;
}

/// Element offset of `c` in an nvmma_shared buffer. The contiguous dim is
/// cut into blocks of `width` bytes (16 without swizzle); blocks follow each
/// other, each holding all rows. Within a block, byte address a of a row
/// moves its 16-byte chunk (bits 4..) by XOR with bits 7.. of a, masked to
/// the width's chunk count: the 32/64/128B swizzle modes.
int64_t nvmmaOffset(const Coord &c, const std::vector<int64_t> &shape,
                    int64_t width, bool transposed, int64_t elemBits) {
  int colDim = transposed ? 0 : 1, rowDim = 1 - colDim;
  int64_t rowBytes = width ? width : 16;
  int64_t elemBytesX8 = elemBits; // bytes * 8, exact for 8..64-bit elements
  int64_t colsPerBlock = rowBytes * 8 / elemBits;
  int64_t col = c[colDim], row = c[rowDim];
  int64_t block = col / colsPerBlock, colIn = col % colsPerBlock;
  int64_t byte = row * rowBytes + colIn * elemBytesX8 / 8;
  if (width) {
    int64_t chunkMask = width / 16 - 1;
    byte ^= ((byte >> 7) & chunkMask) << 4;
  }
  int64_t blockBytes = shape[rowDim] * rowBytes;
  return (block * blockBytes + byte) * 8 / elemBits;
}

/// Checks `ll` (offset -> coord) against `offsetOf` at every coordinate:
/// the map sends offsetOf(c) to c, every offset is hit once, and the
/// inverse sends c back to offsetOf(c).
void checkAgainstBruteForce(const LinearLayout &ll,
                            const std::vector<int64_t> &shape,
                            const std::function<int64_t(const Coord &)> &offsetOf) {
  int64_t total = 1;
  for (int64_t s : shape)
    total *= s;
  ASSERT_EQ(ll.inSize(kOffset), total);
  ASSERT_EQ(ll.outSizes(), shape);
  LinearLayout inv = ll.invert();
  std::vector<int> hits(total, 0);
  for (const Coord &c : allCoords(shape)) {
    int64_t off = offsetOf(c);
    ASSERT_GE(off, 0);
    ASSERT_LT(off, total);
    ++hits[off];
    ASSERT_EQ(ll.apply({{kOffset, off}}), c) << "offset " << off;
    Basis back = inv.apply(c);
    ASSERT_EQ(back[inv.outIndex(kOffset)], off);
  }
  for (int64_t o = 0; o < total; ++o)
    ASSERT_EQ(hits[o], 1) << "offset " << o << " of the formula";
}

void checkSwizzled(int64_t vec, int64_t perPhase, int64_t maxPhase,
                   std::vector<int64_t> order, std::vector<int64_t> shape) {
  // Any rank (the rank-1 case has no shape[1]).
  std::string dims;
  for (int64_t s : shape)
    dims += (dims.empty() ? "" : "x") + std::to_string(s);
  SCOPED_TRACE("swizzled vec=" + std::to_string(vec) +
               " perPhase=" + std::to_string(perPhase) +
               " maxPhase=" + std::to_string(maxPhase) + " shape " + dims);
  auto *l = SwizzledSharedLayout::get(vec, perPhase, maxPhase, order);
  checkAgainstBruteForce(l->toLinear(shape), shape, [&](const Coord &c) {
    return swizzledOffset(c, shape, vec, perPhase, maxPhase, order);
  });
}

void checkNVMMA(int64_t width, bool transposed, int64_t bits,
                std::vector<int64_t> shape) {
  SCOPED_TRACE("nvmma width=" + std::to_string(width) +
               " transposed=" + std::to_string(transposed) +
               " bits=" + std::to_string(bits) + " shape " +
               std::to_string(shape[0]) + "x" + std::to_string(shape[1]));
  auto *l = NVMMASharedLayout::get(width, transposed, bits);
  checkAgainstBruteForce(l->toLinear(shape), shape, [&](const Coord &c) {
    return nvmmaOffset(c, shape, width, transposed, bits);
  });
}

} // namespace

TEST(SharedLayouts, SwizzledFp16TileMatchesFormula) {
  // 128x64 fp16, the operand tile of an mma.sync matmul.
  checkSwizzled(8, 1, 8, {1, 0}, {128, 64});
  checkSwizzled(8, 2, 4, {1, 0}, {128, 64});
  checkSwizzled(4, 1, 8, {0, 1}, {128, 64});
  checkSwizzled(8, 4, 2, {0, 1}, {64, 128});
}

TEST(SharedLayouts, SwizzledEdgeCasesMatchFormula) {
  checkSwizzled(1, 1, 1, {1, 0}, {16, 8});   // plain row-major
  checkSwizzled(1, 1, 1, {0, 1}, {16, 8});   // plain column-major
  checkSwizzled(8, 1, 8, {1, 0}, {32, 16});  // fewer groups than phases
  checkSwizzled(16, 1, 4, {1, 0}, {8, 8});   // vec wider than the row
  checkSwizzled(2, 1, 4, {1, 0}, {1, 32});   // one row
  checkSwizzled(8, 1, 8, {0}, {64});         // rank 1: no swizzle
  std::vector<int64_t> shape3{4, 16, 32};    // rank 3: swizzle in dims 2, 1
  auto *l = SwizzledSharedLayout::get(4, 1, 8, {2, 1, 0});
  checkAgainstBruteForce(l->toLinear(shape3), shape3, [&](const Coord &c) {
    return swizzledOffset(c, shape3, 4, 1, 8, {2, 1, 0});
  });
}

TEST(SharedLayouts, NVMMAFp16TilesMatchPTXSwizzles) {
  for (int64_t width : {0, 32, 64, 128})
    for (bool transposed : {false, true}) {
      checkNVMMA(width, transposed, 16, {128, 64});
      // 64xN wgmma operand tiles.
      for (int64_t n : {64, 128, 256})
        checkNVMMA(width, transposed, 16, {64, n});
    }
}

TEST(SharedLayouts, NVMMAOtherElementWidthsMatchPTXSwizzles) {
  for (int64_t width : {0, 32, 64, 128})
    for (int64_t bits : {8, 32, 64}) {
      int64_t cols = std::max<int64_t>(width, 16) * 8 / bits;
      checkNVMMA(width, false, bits, {64, std::max<int64_t>(cols, 32)});
      checkNVMMA(width, true, bits, {std::max<int64_t>(cols, 32), 16});
    }
}

TEST(SharedLayouts, NVMMA128BKnownRows) {
  // Row 3 of a 128B-swizzled fp16 tile: chunk c (8 halves) sits at c ^ 3.
  auto ll = NVMMASharedLayout::get(128, false, 16)->toLinear({64, 64});
  EXPECT_EQ(ll.apply({{kOffset, 3 * 64 + 0}}), (Coord{3, 24}));
  EXPECT_EQ(ll.apply({{kOffset, 3 * 64 + 8 * 3}}), (Coord{3, 0}));
  EXPECT_EQ(ll.apply({{kOffset, 8 * 64 + 5}}), (Coord{8, 5}));
}

TEST(SharedLayouts, NVMMARejectsTilesNarrowerThanTheSwizzle) {
  auto *l = NVMMASharedLayout::get(128, false, 16);
  EXPECT_THROW(l->toLinear({64, 32}), InternalError);
  EXPECT_NE(l->checkMemDesc(Type::scalar(DType::FP16), {64, 32}), "");
  EXPECT_NE(l->checkMemDesc(Type::scalar(DType::FP32), {64, 64}), "");
  EXPECT_EQ(l->checkMemDesc(Type::scalar(DType::FP16), {64, 64}), "");
}

TEST(SharedLayouts, TextRoundTripsAndInterns) {
  std::vector<const SharedLayout *> layouts = {
      SwizzledSharedLayout::get(8, 1, 8, {1, 0}),
      SwizzledSharedLayout::get(1, 1, 1, {0}),
      SwizzledSharedLayout::get(4, 2, 4, {2, 0, 1}),
      NVMMASharedLayout::get(128, false, 16),
      NVMMASharedLayout::get(64, true, 8),
      NVMMASharedLayout::get(0, false, 32),
  };
  for (const SharedLayout *l : layouts) {
    std::string text = l->str();
    size_t pos = 0;
    EXPECT_EQ(parseSharedLayout(text, pos), l) << text;
    EXPECT_EQ(pos, text.size());
  }
  EXPECT_EQ(layouts[0]->str(),
            "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, "
            "order = [1, 0]}>");
  EXPECT_EQ(layouts[3]->str(),
            "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, "
            "elementBitWidth = 16}>");
}

TEST(SharedLayouts, MalformedTextIsRejected) {
  for (std::string bad : {
           "#ttg.swizzled_shared<{vec = 3, perPhase = 1, maxPhase = 8, "
           "order = [1, 0]}>",
           "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, "
           "order = [1, 1]}>",
           "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8}>",
           "#ttg.nvmma_shared<{swizzlingByteWidth = 96, transposed = false, "
           "elementBitWidth = 16}>",
           "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = maybe, "
           "elementBitWidth = 16}>",
           "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, "
           "elementBitWidth = 12}>",
       }) {
    size_t pos = 0;
    EXPECT_EQ(parseSharedLayout(bad, pos), nullptr) << bad;
    EXPECT_EQ(pos, 0u);
  }
}

TEST(SharedLayouts, MemDescTypeRoundTripsThroughTheParser) {
  registerLayoutParser();
  const char *text = R"(tt.func @k() {
  %a = ttg.local_alloc : !ttg.memdesc<3x128x64xf16, #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>, mutable>
  %b = ttg.local_alloc : !ttg.memdesc<64x128xf16, #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>>
  tt.return
}
)";
  auto m = parseModule(text, "t.tir");
  const Type *a = m->functions()[0]->entry().ops().front()->result(0)->type();
  ASSERT_TRUE(a->isMemDesc());
  EXPECT_TRUE(a->isMutable());
  EXPECT_TRUE(a->isMultiBuffered());
  EXPECT_EQ(a->numBuffers(), 3);
  EXPECT_EQ(a->bufferShape(), (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(sharedLayoutOf(a), SwizzledSharedLayout::get(8, 1, 8, {1, 0}));
  EXPECT_EQ(sharedLinearOf(a).inSize(kOffset), 128 * 64);
  const Type *b =
      (*std::next(m->functions()[0]->entry().ops().begin()))->result(0)->type();
  EXPECT_FALSE(b->isMutable());
  EXPECT_FALSE(b->isMultiBuffered());
  EXPECT_EQ(b->numBuffers(), 1);
  EXPECT_EQ(print(*m), text);
}

namespace {

/// The permuted layout (ttg.memdesc_trans's) against the layout itself: at
/// every offset, the view's coordinate is the tile's coordinate permuted
/// (view dim i = tile dim perm[i]).
void checkPermuted(const SharedLayout *l, const std::vector<int64_t> &perm,
                   const std::vector<int64_t> &shape) {
  SCOPED_TRACE(l->str());
  auto *view = dynamic_cast<const SharedLayout *>(l->permuted(perm));
  ASSERT_NE(view, nullptr);
  std::vector<int64_t> viewShape;
  for (int64_t d : perm)
    viewShape.push_back(shape[d]);
  LinearLayout a = l->toLinear(shape), b = view->toLinear(viewShape);
  ASSERT_EQ(a.inSize(kOffset), b.inSize(kOffset));
  for (int64_t o = 0; o < a.inSize(kOffset); ++o) {
    Basis c = a.apply({{kOffset, o}}), v = b.apply({{kOffset, o}});
    for (size_t i = 0; i < perm.size(); ++i)
      ASSERT_EQ(v[i], c[perm[i]]) << "offset " << o << ", view dim " << i;
  }
  // Permuting back gives the layout itself (interned: the same pointer).
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[perm[i]] = (int64_t)i;
  EXPECT_EQ(view->permuted(inv), l);
}

} // namespace

TEST(SharedLayouts, PermutedViewsSeeTheSameBytes) {
  for (int64_t width : {0, 32, 64, 128})
    for (bool transposed : {false, true}) {
      checkPermuted(NVMMASharedLayout::get(width, transposed, 16), {1, 0},
                    {256, 64});
      checkPermuted(NVMMASharedLayout::get(width, transposed, 16), {1, 0},
                    {64, 128});
    }
  checkPermuted(NVMMASharedLayout::get(128, false, 8), {1, 0}, {64, 128});
  checkPermuted(SwizzledSharedLayout::get(8, 1, 8, {1, 0}), {1, 0}, {64, 32});
  checkPermuted(SwizzledSharedLayout::get(4, 2, 4, {0, 1}), {1, 0}, {32, 64});
  checkPermuted(SwizzledSharedLayout::get(4, 1, 8, {2, 0, 1}), {1, 2, 0},
                {4, 16, 32});
  // The identity permutation is the layout itself.
  auto *n = NVMMASharedLayout::get(128, false, 16);
  EXPECT_EQ(n->permuted({0, 1}), n);
}

TEST(SharedLayouts, PermutedRejectsNonPermutations) {
  EXPECT_EQ(NVMMASharedLayout::get(128, false, 16)->permuted({0}), nullptr);
  EXPECT_EQ(NVMMASharedLayout::get(128, false, 16)->permuted({1, 1}), nullptr);
  auto *s = SwizzledSharedLayout::get(8, 1, 8, {1, 0});
  EXPECT_EQ(s->permuted({0, 0}), nullptr);
  EXPECT_EQ(s->permuted({2, 0}), nullptr);
  EXPECT_EQ(s->permuted({0, 1, 2}), nullptr);
}

// The TMA copies that write a buffer in its layout (tmaSwizzleBytes): an
// NVMMA layout of rows contiguous (not transposed) is written by boxes of
// its own swizzle width; the transposed form, and a swizzled layout whose
// pattern is no tensor map's, by none.
TEST(SharedLayouts, TMASwizzleOfNVMMABuffers) {
  auto md = [](const Layout *l, DType t, std::vector<int64_t> shape) {
    return Type::memdesc(Type::scalar(t), std::move(shape), l, true);
  };
  for (int64_t width : {0, 32, 64, 128})
    for (auto [t, bits] : {std::pair{DType::FP16, 16}, std::pair{DType::FP8E4NV, 8},
                           std::pair{DType::FP32, 32}}) {
      const Layout *l = NVMMASharedLayout::get(width, false, bits);
      int64_t cols = std::max<int64_t>(width, 16) * 8 / bits * 2; // two boxes a row
      EXPECT_EQ(tmaSwizzleBytes(md(l, t, {64, cols})), std::optional<int64_t>(width))
          << "width " << width << ", " << bits << " bits";
      if (width > 0)
        EXPECT_EQ(tmaSwizzleBytes(md(NVMMASharedLayout::get(width, true, bits), t, {cols, 64})),
                  std::nullopt);
    }
  // Plain row-major is none (without a swizzle TMA writes 16-byte columns
  // of all the rows, one after the other); the swizzled layout of 16-byte
  // groups over rows of 128 bytes, phase = row mod 8, is the 128B swizzle.
  EXPECT_EQ(tmaSwizzleBytes(md(SwizzledSharedLayout::get(1, 1, 1, {1, 0}), DType::FP16, {64, 64})),
            std::nullopt);
  EXPECT_EQ(tmaSwizzleBytes(md(SwizzledSharedLayout::get(8, 1, 8, {1, 0}), DType::FP16, {64, 64})),
            std::optional<int64_t>(128));
  EXPECT_EQ(tmaSwizzleBytes(md(SwizzledSharedLayout::get(8, 1, 8, {0, 1}), DType::FP16, {64, 64})),
            std::nullopt);
}
