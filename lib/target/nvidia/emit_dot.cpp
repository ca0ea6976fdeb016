// tt.dot: mma.sync on the tensor cores (accumulator in a #ttg.nvidia_mma
// version-2 layout, operands in #ttg.dot_op layouts; 2-D or batched, where
// every coordinate carries its batch index and each instruction stays in
// one batch element), or FMAs (any other accumulator layout; operand
// layouts from accelerate-matmul that give each thread all of K for its
// rows and columns).
//
// Registers are found through the layouts, not through assumptions about
// their order: for thread (lane 0, warp 0) every register's coordinate is
// layout.regCoord(r); another thread's is that XOR its own lane/warp part,
// which is the same for all its registers. So "the register holding
// relative coordinate c" is one table per operand, valid in every thread,
// once the operands' warp parts agree with the accumulator's (checked) and
// each slot of the instruction's fragment sits where the PTX ISA says for
// every lane (checked: a layout that disagrees is an InternalError here,
// not a wrong result on the GPU).
#include "emitter.h"

#include "tritium/gpu/mma_layouts.h"
#include "tritium/gpu/passes.h"
#include "tritium/gpu/shared_layouts.h"

#include <map>
#include <set>

namespace tritium::nvidia {

namespace {

using Coord = std::pair<int64_t, int64_t>;

/// Relative coordinate -> register, for thread (lane 0, warp 0).
std::map<Coord, int> registerTable(const gpu::LinearLayout &ll) {
  std::map<Coord, int> t;
  for (int r = 0; r < ll.numRegs(); ++r) {
    gpu::Basis c = ll.regCoord(r);
    t.emplace(Coord{c[0], c[1]}, r);
  }
  return t;
}

int lookup(Emitter &e, const Operation &op, const std::map<Coord, int> &t,
           Coord c, const char *what) {
  auto it = t.find(c);
  if (it == t.end())
    e.internalError(op, std::string("the ") + what +
                            " layout holds no register for (" +
                            std::to_string(c.first) + ", " +
                            std::to_string(c.second) + ")");
  return it->second;
}

/// The warps of operand `opLL` must sit where the accumulator's do along
/// the dim they share (accDim of the accumulator = opDim of the operand).
void checkWarps(Emitter &e, const Operation &op, const gpu::LinearLayout &acc,
                int accDim, const gpu::LinearLayout &opLL, int opDim,
                bool lanesToo) {
  auto same = [&](const std::vector<gpu::Basis> &a,
                  const std::vector<gpu::Basis> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i][accDim] != b[i][opDim])
        return false;
    return true;
  };
  if (!same(acc.warp(), opLL.warp()) ||
      (lanesToo && !same(acc.lane(), opLL.lane())))
    e.internalError(op, "operand layout " + opLL.str() +
                            " does not place its threads like the "
                            "accumulator " +
                            acc.str());
}

// ---- mma.sync ---------------------------------------------------------------

/// Fragment coordinates (PTX ISA, mma.sync m16n8k{8*w}) of lane l, with
/// w K elements per 32-bit register.
Coord fragA(int i, int el, int l, int w) {
  int g = l >> 2, t = l & 3;
  return {g + 8 * (i & 1), t * w + el + 4 * w * (i >> 1)};
}
Coord fragB(int i, int el, int l, int w) {
  int g = l >> 2, t = l & 3;
  return {t * w + el + 4 * w * i, g};
}
Coord fragC(int i, int l) {
  int g = l >> 2, t = l & 3;
  return {g + 8 * (i >> 1), 2 * t + (i & 1)};
}

/// Every lane's fragment slot `slot(i, el, lane)` (a coordinate within the
/// tile at `origin`) must be the coordinate the layout gives the register
/// the lane-0 table chose for it.
template <class Frag>
void checkFragment(Emitter &e, const Operation &op,
                   const gpu::LinearLayout &ll, int reg, Coord origin,
                   Frag slot) {
  for (int l = 0; l < 32; ++l) {
    gpu::Basis c = ll.apply(reg, l, 0);
    Coord want = slot(l);
    if (c[0] != origin.first + want.first ||
        c[1] != origin.second + want.second)
      e.internalError(op, "layout " + ll.str() +
                              " does not match mma.sync's fragment in lane " +
                              std::to_string(l));
  }
}

/// A coordinate of an mma.sync dot's tensors: (batch, row, column), the
/// batch 0 for a rank-2 dot. Each instruction works within one batch.
struct BCoord {
  int64_t b, row, col;
  auto operator<=>(const BCoord &) const = default;
};

BCoord bcoord(const gpu::Basis &c) {
  size_t r = c.size();
  return {r == 3 ? c[0] : 0, c[r - 2], c[r - 1]};
}

/// Relative coordinate -> register, for thread (lane 0, warp 0).
std::map<BCoord, int> batchedTable(const gpu::LinearLayout &ll) {
  std::map<BCoord, int> t;
  for (int r = 0; r < ll.numRegs(); ++r)
    t.emplace(bcoord(ll.regCoord(r)), r);
  return t;
}

struct MmaDot {
  Emitter &e;
  Operation &op;
  const gpu::LinearLayout &la, &lb, &lc;
  std::map<BCoord, int> ta, tb, tc;
  size_t rank;
  int w;      // K elements per register
  int kInstr; // 8 * w
  DType opT, accT;
  std::string prec;

  MmaDot(Emitter &e, Operation &op)
      : e(e), op(op), la(gpu::linearOf(op.operand(0)->type())),
        lb(gpu::linearOf(op.operand(1)->type())),
        lc(gpu::linearOf(op.result(0)->type())) {
    auto *da = dynamic_cast<const gpu::DotOperandLayout *>(
        gpu::layoutOf(op.operand(0)->type()));
    auto *db = dynamic_cast<const gpu::DotOperandLayout *>(
        gpu::layoutOf(op.operand(1)->type()));
    if (!da || !db || da->opIdx != 0 || db->opIdx != 1 ||
        da->kWidth != db->kWidth)
      e.internalError(op, "an mma accumulator needs dot_op operands "
                          "(opIdx 0 and 1, one kWidth)");
    rank = lc.shape().size();
    w = da->kWidth;
    kInstr = 8 * w;
    opT = op.operand(0)->type()->element()->dtype();
    accT = op.result(0)->type()->element()->dtype();
    prec = op.hasAttr("input_precision") ? op.strAttr("input_precision")
                                         : std::string("ieee");
    ta = batchedTable(la);
    tb = batchedTable(lb);
    tc = batchedTable(lc);
    int mDim = int(rank) - 2, nDim = int(rank) - 1;
    checkWarps(e, op, lc, mDim, la, mDim, false);
    checkWarps(e, op, lc, nDim, lb, nDim, false);
    if (rank == 3) {
      checkWarps(e, op, lc, 0, la, 0, false);
      checkWarps(e, op, lc, 0, lb, 0, false);
    }
  }

  int find(const std::map<BCoord, int> &t, BCoord c, const char *what) {
    auto it = t.find(c);
    if (it == t.end())
      e.internalError(op, std::string("the ") + what +
                              " layout holds no register for (" +
                              std::to_string(c.b) + ", " +
                              std::to_string(c.row) + ", " +
                              std::to_string(c.col) + ")");
    return it->second;
  }

  /// Every lane's slot `slot(lane)` of the tile at `origin` must be where
  /// the layout puts register `reg` of that lane (warp 0).
  template <class Frag>
  void check(const gpu::LinearLayout &ll, int reg, BCoord origin,
             Frag slot) {
    for (int l = 0; l < 32; ++l) {
      BCoord c = bcoord(ll.apply(reg, l, 0));
      Coord want = slot(l);
      if (c != BCoord{origin.b, origin.row + want.first,
                      origin.col + want.second})
        e.internalError(op, "layout " + ll.str() +
                                " does not match mma.sync's fragment in "
                                "lane " +
                                std::to_string(l));
    }
  }

  /// 32-bit register i of the A (opIdx 0) or B fragment of the tile at
  /// `origin`, built from the operand's element registers.
  std::vector<std::string> fragment(int opIdx, BCoord origin,
                                    const Regs &vals, int part) {
    const auto &table = opIdx == 0 ? ta : tb;
    const auto &ll = opIdx == 0 ? la : lb;
    int n = opIdx == 0 ? 4 : 2;
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> el;
      for (int x = 0; x < w; ++x) {
        Coord f = opIdx == 0 ? fragA(i, x, 0, w) : fragB(i, x, 0, w);
        int r = find(table,
                     {origin.b, origin.row + f.first, origin.col + f.second},
                     opIdx == 0 ? "A" : "B");
        if (checked_.insert({opIdx, r}).second)
          check(ll, r, origin, [&](int l) {
            return opIdx == 0 ? fragA(i, x, l, w) : fragB(i, x, l, w);
          });
        el.push_back(vals[r]);
      }
      out.push_back(pack(el, part));
    }
    return out;
  }
  /// One 32-bit operand register from w elements. part (tf32x3): 0 the
  /// value rounded to tf32, 1 the rounded remainder.
  std::string pack(const std::vector<std::string> &el, int part) {
    std::string r = e.reg(RC::B32);
    if (w == 2) {
      e.ins("mov.b32 " + r + ", {" + el[0] + ", " + el[1] + "}");
    } else if (w == 1) {
      e.ins("cvt.rna.tf32.f32 " + r + ", " + el[0]);
      if (part == 1) {
        std::string hi = e.reg(RC::F32), lo = e.reg(RC::F32);
        e.ins("mov.b32 " + hi + ", " + r);
        e.ins("sub.f32 " + lo + ", " + el[0] + ", " + hi);
        r = e.reg(RC::B32);
        e.ins("cvt.rna.tf32.f32 " + r + ", " + lo);
      }
    } else { // four 8-bit ints, each in the low byte of a 16-bit register
      std::string h[2];
      for (int k = 0; k < 2; ++k) {
        std::string lo = e.reg(RC::B16), hi = e.reg(RC::B16);
        h[k] = e.reg(RC::B16);
        e.ins("and.b16 " + lo + ", " + el[2 * k] + ", 255");
        e.ins("shl.b16 " + hi + ", " + el[2 * k + 1] + ", 8");
        e.ins("or.b16 " + h[k] + ", " + lo + ", " + hi);
      }
      e.ins("mov.b32 " + r + ", {" + h[0] + ", " + h[1] + "}");
    }
    return r;
  }

  std::string shapeSuffix() const {
    return "m16n8k" + std::to_string(kInstr);
  }

  std::string typeSuffix() const {
    switch (opT) {
    case DType::FP16:
      return accT == DType::FP16 ? ".f16.f16.f16.f16" : ".f32.f16.f16.f32";
    case DType::BF16:
      return ".f32.bf16.bf16.f32";
    case DType::FP32:
      return ".f32.tf32.tf32.f32";
    case DType::I8:
      return ".s32.s8.s8.s32";
    default:
      e.internalError(op, "mma.sync has no instruction for these operands");
    }
  }

  void emit() {
    e.requireSM(op, 80, "mma.sync (tl.dot on tensor cores)");
    const Regs &A = e.regs(op.operand(0)), &B = e.regs(op.operand(1)),
               &C = e.regs(op.operand(2));
    int64_t K = op.operand(0)->type()->shape()[rank - 1];
    // The accumulator tiles this thread computes, and their registers.
    auto tileOf = [](BCoord c) {
      return BCoord{c.b, c.row - c.row % 16, c.col - c.col % 8};
    };
    std::set<BCoord> tiles;
    for (int r = 0; r < lc.numRegs(); ++r)
      tiles.insert(tileOf(bcoord(lc.regCoord(r))));
    std::map<BCoord, std::vector<std::string>> acc; // tile -> c0..c3
    for (BCoord t : tiles) {
      std::vector<std::string> c;
      for (int i = 0; i < 4; ++i) {
        Coord f = fragC(i, 0);
        int r = find(tc, {t.b, t.row + f.first, t.col + f.second},
                     "accumulator");
        if (i == 0)
          check(lc, r, t, [&](int l) { return fragC(0, l); });
        c.push_back(C[r]);
      }
      acc[t] = c;
    }
    // tf32x3: a_hi*b_lo, then a_lo*b_hi, then a_hi*b_hi (small terms
    // first, into one fp32 accumulator); otherwise one pass.
    std::vector<std::pair<int, int>> passes = {{0, 0}};
    if (opT == DType::FP32 && prec == "tf32x3")
      passes = {{0, 1}, {1, 0}, {0, 0}};
    std::string ins = "mma.sync.aligned." + shapeSuffix() + ".row.col" +
                      typeSuffix();
    bool f16acc = accT == DType::FP16;
    for (auto [pa, pb] : passes) {
      std::map<BCoord, std::vector<std::string>> fa, fb;
      for (int64_t k0 = 0; k0 < K; k0 += kInstr) {
        for (BCoord t : tiles) {
          BCoord oa{t.b, t.row, k0}, ob{t.b, k0, t.col};
          if (!fa.count(oa))
            fa[oa] = fragment(0, oa, A, pa);
          if (!fb.count(ob))
            fb[ob] = fragment(1, ob, B, pb);
          std::vector<std::string> &c = acc[t];
          const auto &a = fa[oa], &b = fb[ob];
          std::string text = ins + " ";
          std::vector<std::string> d;
          if (f16acc) {
            // Two f16x2 registers in and out.
            std::string c01 = e.reg(RC::B32), c23 = e.reg(RC::B32);
            e.ins("mov.b32 " + c01 + ", {" + c[0] + ", " + c[1] + "}");
            e.ins("mov.b32 " + c23 + ", {" + c[2] + ", " + c[3] + "}");
            std::string d01 = e.reg(RC::B32), d23 = e.reg(RC::B32);
            e.ins(text + "{" + d01 + ", " + d23 + "}, {" + a[0] + ", " +
                  a[1] + ", " + a[2] + ", " + a[3] + "}, {" + b[0] + ", " +
                  b[1] + "}, {" + c01 + ", " + c23 + "}");
            for (int i = 0; i < 4; ++i)
              d.push_back(e.reg(RC::B16));
            e.ins("mov.b32 {" + d[0] + ", " + d[1] + "}, " + d01);
            e.ins("mov.b32 {" + d[2] + ", " + d[3] + "}, " + d23);
          } else {
            RC rc = accT == DType::I32 ? RC::B32 : RC::F32;
            for (int i = 0; i < 4; ++i)
              d.push_back(e.reg(rc));
            e.ins(text + "{" + d[0] + ", " + d[1] + ", " + d[2] + ", " +
                  d[3] + "}, {" + a[0] + ", " + a[1] + ", " + a[2] + ", " +
                  a[3] + "}, {" + b[0] + ", " + b[1] + "}, {" + c[0] + ", " +
                  c[1] + ", " + c[2] + ", " + c[3] + "}");
          }
          c = d;
        }
      }
    }
    Regs out(lc.numRegs());
    for (int r = 0; r < lc.numRegs(); ++r) {
      BCoord c = bcoord(lc.regCoord(r));
      BCoord t = tileOf(c);
      int slot = 2 * (c.row - t.row >= 8) + (int)((c.col - t.col) & 1);
      out[r] = acc[t][slot];
    }
    e.bind(op.result(0), std::move(out));
  }

private:
  std::set<std::pair<int, int>> checked_;
};

// ---- wgmma ------------------------------------------------------------------

/// Whether operand i of `op` is the result of an arithmetic op (which
/// the emitter gives fresh registers, never another value's) and `op` is its
/// only user, so `op` may overwrite its registers.
bool ownsFreshRegisters(Operation &op, unsigned i) {
  Value *v = op.operand(i);
  Operation *def = v->definingOp();
  if (!def)
    return false;
  switch (def->code()) {
  case OpCode::MulF:
  case OpCode::AddF:
  case OpCode::SubF:
  case OpCode::DivF:
  case OpCode::Fma:
    break;
  default:
    return false;
  }
  Operation *top = &op;
  while (top->parentOp())
    top = top->parentOp();
  int uses = 0;
  for (auto &o : top->parentBlock()->ops())
    o->walk([&](Operation *u) {
      for (Value *x : u->operands())
        uses += x == v;
    });
  return uses == 1;
}


/// One operand of wgmma in shared memory: its descriptor (PTX ISA, "matrix
/// descriptor": start address, leading and stride byte offsets, all >> 4,
/// and the swizzle mode in bits 62-63) and where each instruction's tile
/// starts. The NVMMA layout stores column blocks of W bytes (the swizzle
/// width) along the contiguous dim, each block all rows of W bytes, 8 rows
/// (8W bytes) per swizzle atom.
struct WgmmaOperand {
  std::string buf;  // .u32 shared address of the buffer (the operand's)
  std::string thr;  // prologue: this warpgroup's offset >> 4, with the LBO
  int64_t rows;     // extent of the non-contiguous dim of the buffer
  int64_t w;        // swizzle width in bytes
  int64_t eb;       // element bytes
  bool kMajor;      // contiguous dim is K
  std::string lo, hi; // the descriptor's words at `base` (built on first use)
  std::string desc;   // the whole descriptor at `base`, and at each offset:
  std::map<int64_t, std::string> at; // one register per distinct tile
  int64_t lbo() const { return kMajor ? 16 : rows * w; }
  int64_t sbo() const { return 8 * w; }
  int mode() const { return w == 128 ? 1 : w == 64 ? 2 : 3; }
  /// Byte offset of the tile at (k0 along K, o0 along the other dim).
  int64_t offset(int64_t k0, int64_t o0) const {
    int64_t contig = kMajor ? k0 : o0, other = kMajor ? o0 : k0;
    int64_t cb = contig * eb;
    return (cb / w) * rows * w + cb % w + other * w;
  }
};

struct WgmmaDot {
  Emitter &e;
  Operation &op;
  const gpu::LinearLayout &lc;
  const gpu::NvidiaMmaLayout *mma;

  WgmmaDot(Emitter &e, Operation &op, const gpu::NvidiaMmaLayout *mma)
      : e(e), op(op), lc(gpu::linearOf(op.result(0)->type())), mma(mma) {}

  /// Operand i's buffer as wgmma reads it; `origin` is the register with
  /// this thread's warpgroup's first row of A (M) or column of B (N).
  WgmmaOperand operand(unsigned i, const std::string &origin) {
    const Type *m = op.operand(i)->type();
    auto *l = dynamic_cast<const gpu::NVMMASharedLayout *>(
        gpu::sharedLayoutOf(m));
    if (!l || l->swizzlingByteWidth < 32)
      e.internalError(op, "operand " + std::to_string(i) + " (" + m->str() +
                              ") is not in a swizzled NVMMA layout");
    WgmmaOperand o;
    int contig = l->transposed ? 0 : 1;
    int kDim = i == 0 ? 1 : 0;
    o.kMajor = contig == kDim;
    o.rows = m->shape()[1 - contig];
    o.w = l->swizzlingByteWidth;
    o.eb = gpu::storageBytes(m->element());
    if (i == 0 && !o.kMajor)
      e.internalError(op, "the A operand must be K-major");
    // The warpgroup's part: rows of W bytes (K-major), or whole column
    // blocks (N-major B: the swizzle width divides the instruction's N,
    // accelerate-matmul chose it so). It depends on the warp alone: computed
    // once, in the kernel's prologue, >> 4 and with the descriptor's LBO
    // field, so that a loop adds it to the buffer's address >> 4.
    o.thr = e.reg(RC::B32);
    e.pro("mul.lo.s32 " + o.thr + ", " + origin + ", " +
          std::to_string((o.kMajor ? o.w : o.eb * o.rows) >> 4));
    e.pro("or.b32 " + o.thr + ", " + o.thr + ", " +
          std::to_string((o.lbo() >> 4) << 16));
    o.buf = e.regs(op.operand(i))[0];
    return o;
  }

  /// The 64-bit descriptor of `o` at byte offset `off` from the start of
  /// this warpgroup's tile. The low word (start address >> 4 in bits 0-13,
  /// LBO >> 4 in 16-29) is built once per operand, the buffer's address >>
  /// 4 plus the prologue's part; a tile adds off >> 4 to it (shared
  /// addresses are below 2^18, so the 14-bit field does not carry into the
  /// LBO, and the buffer and the offsets are multiples of 16).
  std::string descriptor(WgmmaOperand &o, int64_t off) {
    if (o.lo.empty()) {
      o.lo = e.reg(RC::B32);
      e.ins("shr.u32 " + o.lo + ", " + o.buf + ", 4");
      e.ins("add.s32 " + o.lo + ", " + o.lo + ", " + o.thr);
      int64_t hi = (o.sbo() >> 4) | (int64_t(o.mode()) << 30);
      o.hi = e.reg(RC::B32);
      e.ins("mov.b32 " + o.hi + ", " + std::to_string(hi));
      o.desc = e.reg(RC::B64);
      e.ins("mov.b64 " + o.desc + ", {" + o.lo + ", " + o.hi + "}");
    }
    if (!off)
      return o.desc;
    auto it = o.at.find(off);
    if (it != o.at.end())
      return it->second;
    if (off % 16)
      e.internalError(op, "a wgmma tile starts at byte offset " +
                              std::to_string(off) + ", not a multiple of 16");
    // The start address field cannot carry into the LBO (above), so the
    // 64-bit add is the 32-bit one on the low word.
    std::string d = e.reg(RC::B64);
    e.ins("add.s64 " + d + ", " + o.desc + ", " + std::to_string(off >> 4));
    o.at[off] = d;
    return d;
  }

  /// The scf.for whose accumulator this op updates in place with a group
  /// left in flight, or null: {async = true} (the pipelining pass made the
  /// buffers safe) and a carried accumulator (gpu::carriedAccumulatorLoop).
  Operation *asyncLoop() const {
    if (!op.hasAttr("async") || !op.boolAttr("async"))
      return nullptr;
    return gpu::carriedAccumulatorLoop(op);
  }

  void emit() {
    e.requireSM(op, 90, "wgmma (tl.dot on Hopper's tensor cores)");
    if (!e.opts.target.archA)
      e.userError(op, "wgmma needs the sm_90a target");
    const Type *rt = op.result(0)->type();
    DType at = op.operand(0)->type()->element()->dtype();
    DType bt = op.operand(1)->type()->element()->dtype();
    DType ct = rt->element()->dtype();
    int64_t K = op.operand(0)->type()->shape()[1];
    int64_t instrN = mma->instrShape[1], instrK = mma->instrShape[2];
    // This thread's warpgroup: the M and N origin of its tile (the warp
    // bases above the four warps of a group).
    const auto &wb = lc.warp();
    // Loop-invariant: in the kernel's prologue.
    std::string wg = e.reg(RC::B32), mOff = e.reg(RC::B32),
                nOff = e.reg(RC::B32);
    e.pro("shr.u32 " + wg + ", " + e.warp() + ", 2");
    e.pro("mov.u32 " + mOff + ", 0");
    e.pro("mov.u32 " + nOff + ", 0");
    for (size_t j = 2; j < wb.size(); ++j) {
      std::string bit = e.reg(RC::B32);
      e.pro("bfe.u32 " + bit + ", " + wg + ", " + std::to_string(j - 2) +
            ", 1");
      if (wb[j][0])
        e.pro("mad.lo.s32 " + mOff + ", " + bit + ", " +
              std::to_string(wb[j][0]) + ", " + mOff);
      if (wb[j][1])
        e.pro("mad.lo.s32 " + nOff + ", " + bit + ", " +
              std::to_string(wb[j][1]) + ", " + nOff);
    }
    // A in shared memory (a descriptor), or in registers (a dot_op layout
    // whose per-warp fragments are mma.sync's m16n8k16 A fragments).
    bool regA = op.operand(0)->type()->isTensor();
    WgmmaOperand A{};
    if (!regA)
      A = operand(0, mOff);
    WgmmaOperand B = operand(1, nOff);

    // The instruction tiles of warp 0's accumulator: (m0, n0) origins.
    auto tc = registerTable(lc);
    std::set<Coord> tiles;
    for (int r = 0; r < lc.numRegs(); ++r) {
      gpu::Basis c = lc.regCoord(r);
      tiles.insert({c[0] - c[0] % 16, c[1] - c[1] % instrN});
    }
    const Regs &C = e.regs(op.operand(2));
    bool f16acc = ct == DType::FP16;
    Operation *loop = asyncLoop();
    bool inPlace = loop != nullptr;
    // Async and rescaled (acc * alpha): the product moves into the iter
    // arg's registers, which the group then updates in place across the back
    // edge; ptxas coalesces the moves with the multiplication.
    const Regs *argRegs = nullptr;
    if (Value *arg = loop ? gpu::carriedAccumulator(op) : nullptr;
        arg && arg != op.operand(2))
      argRegs = &e.regs(arg);
    // A zero accumulator (qk = tl.dot(q, k)) is not materialised: the first
    // K step runs with scale-d false (d = a * b).
    bool zeroC = !inPlace && isConstantZero(op.operand(2));
    // An fp32/int32 accumulator in fresh registers of its own (an
    // arithmetic result, attention's rescaled acc * alpha) that nothing else
    // reads is updated in place instead of copied first.
    if (!inPlace && !zeroC && ct != DType::FP16 && ownsFreshRegisters(op, 2))
      inPlace = true;
    int nregs = (int)instrN / 2; // accumulator elements per thread
    std::map<Coord, std::vector<int>> slots; // tile -> register per element
    std::map<Coord, std::vector<std::string>> acc;
    for (Coord t : tiles) {
      std::vector<int> s;
      for (int i = 0; i < nregs; ++i) {
        Coord f{8 * ((i % 4) >> 1), 8 * (i / 4) + (i & 1)};
        s.push_back(lookup(e, op, tc, {t.first + f.first, t.second + f.second},
                           "accumulator"));
      }
      for (int l = 0; l < 32; l += 5)
        for (int w = 0; w < 4; ++w) {
          // Lane l of warp w of the group: row 16w + l/4, column 2(l%4).
          gpu::Basis c = lc.apply(s[0], l, w);
          int64_t wantM = t.first + 16 * w + (l >> 2);
          int64_t wantN = t.second + 2 * (l & 3);
          if (c[0] != wantM || c[1] != wantN)
            e.internalError(op, "layout " + lc.str() +
                                    " does not match wgmma's accumulator");
        }
      // The registers the instructions update in place: the loop's own
      // (async: nothing else touches them until the loop's last wait), or
      // fresh copies.
      std::vector<std::string> regs;
      if (zeroC) {
        // scale-d false in the first step ignores the registers' contents.
        RC rc = f16acc ? RC::B32 : ct == DType::I32 ? RC::B32 : RC::F32;
        for (int i = 0; i < (f16acc ? nregs / 2 : nregs); ++i)
          regs.push_back(e.reg(rc));
      } else if (argRegs) {
        RC rc = ct == DType::I32 ? RC::B32 : RC::F32;
        for (int i = 0; i < nregs; ++i) {
          const std::string &r = (*argRegs)[s[i]];
          e.ins(std::string(movFor(rc)) + " " + r + ", " + C[s[i]]);
          regs.push_back(r);
        }
      } else if (inPlace) {
        for (int i = 0; i < nregs; ++i)
          regs.push_back(C[s[i]]);
      } else if (f16acc) {
        for (int i = 0; i < nregs; i += 2) {
          std::string r = e.reg(RC::B32);
          e.ins("mov.b32 " + r + ", {" + C[s[i]] + ", " + C[s[i + 1]] + "}");
          regs.push_back(r);
        }
      } else {
        RC rc = ct == DType::I32 ? RC::B32 : RC::F32;
        for (int i = 0; i < nregs; ++i) {
          std::string r = e.reg(rc);
          e.ins(std::string(movFor(rc)) + " " + r + ", " + C[s[i]]);
          regs.push_back(r);
        }
      }
      slots[t] = s;
      acc[t] = regs;
    }
    auto typeName = [](DType d) -> std::string {
      switch (d) {
      case DType::FP16:
        return "f16";
      case DType::BF16:
        return "bf16";
      case DType::FP8E4NV:
        return "e4m3";
      case DType::FP8E5:
        return "e5m2";
      case DType::I8:
        return "s8";
      default:
        return "?";
      }
    };
    std::string dty = ct == DType::FP32 ? "f32" : ct == DType::FP16 ? "f16"
                                                                    : "s32";
    std::string ins = "wgmma.mma_async.sync.aligned.m64n" +
                      std::to_string(instrN) + "k" + std::to_string(instrK) +
                      "." + dty + "." + typeName(at) + "." + typeName(bt);
    // scale-d true: d = a * b + d.
    std::string one = e.reg(RC::B32), scaleD = e.reg(RC::Pred);
    e.ins("mov.u32 " + one + ", 1");
    e.ins("setp.ne.u32 " + scaleD + ", " + one + ", 0");
    std::string noScaleD;
    if (zeroC) {
      noScaleD = e.reg(RC::Pred);
      e.ins("setp.eq.u32 " + noScaleD + ", " + one + ", 0");
    }
    bool is16 = at == DType::FP16 || at == DType::BF16;
    std::string tail;
    if (ct == DType::I32)
      tail = "";
    else if (is16)
      tail = ", 1, 1, " + std::string(regA ? "" : "0, ") +
             std::string(B.kMajor ? "0" : "1");
    else
      tail = ", 1, 1";
    // Register A: its 32-bit fragments are packed before the fence (wgmma
    // must not see registers written after it).
    std::map<Coord, std::string> fragsA;
    if (regA) {
      if (!is16)
        e.internalError(op, "wgmma reads only 16-bit A operands from "
                            "registers");
      const gpu::LinearLayout &la = gpu::linearOf(op.operand(0)->type());
      checkWarps(e, op, lc, 0, la, 0, false);
      auto ta = registerTable(la);
      const Regs &vals = e.regs(op.operand(0));
      std::set<int> checked;
      for (int64_t k0 = 0; k0 < K; k0 += instrK)
        for (Coord t : tiles) {
          Coord o{t.first, k0};
          if (fragsA.count(o))
            continue;
          std::string list;
          for (int i = 0; i < 4; ++i) {
            std::string el[2];
            for (int x = 0; x < 2; ++x) {
              Coord f = fragA(i, x, 0, 2);
              int r = lookup(e, op, ta, {o.first + f.first, o.second + f.second},
                             "A");
              if (checked.insert(r).second)
                checkFragment(e, op, la, r, o,
                              [&](int l) { return fragA(i, x, l, 2); });
              el[x] = vals[r];
            }
            std::string reg = e.reg(RC::B32);
            e.ins("mov.b32 " + reg + ", {" + el[0] + ", " + el[1] + "}");
            list += (list.empty() ? "" : ", ") + reg;
          }
          fragsA[o] = "{" + list + "}";
        }
    }
    // Every descriptor first, each in a register of its own, then the
    // instructions back to back: built one before each instruction, ptxas
    // reuses one pair of uniform registers, and each wgmma waits for the
    // previous one to have read its descriptor before the next is written.
    std::map<std::pair<Coord, int64_t>, std::pair<std::string, std::string>>
        descs;
    for (int64_t k0 = 0; k0 < K; k0 += instrK)
      for (Coord t : tiles) {
        // Warp 0's tile origin, relative to its warpgroup: rows t.first
        // (a multiple of 64 past the group's), columns t.second.
        std::string da = regA ? fragsA.at({t.first, k0})
                              : descriptor(A, A.offset(k0, t.first));
        descs[{t, k0}] = {da, descriptor(B, B.offset(k0, t.second))};
      }
    // {pingpong} (order-warpgroups): warpgroup 1 waits on named barrier 1
    // until warpgroup 0 has issued this product (its arrival after the
    // commit below); 256 threads complete each phase.
    // With the loop's {pingpong} too (a loop without a barrier of the whole
    // block), the turn goes back as well: warpgroup 0 waits on named
    // barrier 2 until warpgroup 1 has issued its product of the iteration
    // before (the loop's emission arrives once for it before the loop).
    bool pingpong = op.hasAttr("pingpong") && op.boolAttr("pingpong");
    Operation *parent = op.parentOp();
    bool bothWays = pingpong && parent && parent->code() == OpCode::For &&
                    parent->hasAttr("pingpong") && parent->boolAttr("pingpong");
    std::string first, second;
    if (pingpong) {
      first = e.reg(RC::Pred), second = e.reg(RC::Pred);
      e.pro("setp.eq.u32 " + first + ", " + wg + ", 0");
      e.pro("setp.ne.u32 " + second + ", " + wg + ", 0");
      if (bothWays)
        e.ins("@" + first + " bar.sync 2, 256");
      e.ins("@" + second + " bar.sync 1, 256");
    }
    e.ins("wgmma.fence.sync.aligned");
    for (int64_t k0 = 0; k0 < K; k0 += instrK) {
      for (Coord t : tiles) {
        const auto &[da, db] = descs.at({t, k0});
        std::string list;
        for (const std::string &r : acc[t])
          list += (list.empty() ? "" : ", ") + r;
        e.ins(ins + " {" + list + "}, " + da + ", " + db + ", " +
              (zeroC && k0 == 0 ? noScaleD : scaleD) + tail);
      }
    }
    e.ins("wgmma.commit_group.sync.aligned");
    if (pingpong)
      e.ins("@" + first + " bar.arrive 1, 256");
    if (bothWays)
      e.ins("@" + second + " bar.arrive 2, 256");
    if (loop) {
      // Keep this group in flight: the previous iteration's is complete (the
      // pipelining pass left its buffers alone for this); the loop waits
      // for the last one after it ends.
      e.ins("wgmma.wait_group.sync.aligned 1");
      e.asyncWgmmaLoops.insert(loop);
    } else {
      e.ins("wgmma.wait_group.sync.aligned 0");
    }
    Regs out(lc.numRegs());
    for (auto &[t, s] : slots) {
      const auto &regs = acc[t];
      for (int i = 0; i < nregs; ++i) {
        if (f16acc) {
          if (i % 2 == 0) {
            std::string lo = e.reg(RC::B16), hi = e.reg(RC::B16);
            e.ins("mov.b32 {" + lo + ", " + hi + "}, " + regs[i / 2]);
            out[s[i]] = lo;
            out[s[i + 1]] = hi;
          }
        } else {
          out[s[i]] = regs[i];
        }
      }
    }
    // Registers the tables did not name (copies of an element) take the
    // value of the one that did.
    for (int r = 0; r < lc.numRegs(); ++r)
      if (out[r].empty()) {
        gpu::Basis c = lc.regCoord(r);
        out[r] = out[lookup(e, op, tc, {c[0], c[1]}, "accumulator")];
      }
    e.bind(op.result(0), std::move(out));
  }
};

// ---- FMA --------------------------------------------------------------------

void emitFmaDot(Emitter &e, Operation &op) {
  const gpu::LinearLayout &la = gpu::linearOf(op.operand(0)->type()),
                          &lb = gpu::linearOf(op.operand(1)->type()),
                          &lc = gpu::linearOf(op.result(0)->type());
  // [batch..., M, N]: the batch dims place their threads in all three alike.
  size_t rank = lc.shape().size(), mDim = rank - 2, nDim = rank - 1;
  for (size_t d = 0; d + 2 < rank; ++d) {
    checkWarps(e, op, lc, (int)d, la, (int)d, true);
    checkWarps(e, op, lc, (int)d, lb, (int)d, true);
  }
  checkWarps(e, op, lc, (int)mDim, la, (int)mDim, true);
  checkWarps(e, op, lc, (int)nDim, lb, (int)nDim, true);
  // Relative coordinate -> register, for thread (lane 0, warp 0).
  auto table = [](const gpu::LinearLayout &ll) {
    std::map<gpu::Basis, int> t;
    for (int r = 0; r < ll.numRegs(); ++r)
      t.emplace(ll.regCoord(r), r);
    return t;
  };
  auto ta = table(la), tb = table(lb);
  auto find = [&](const std::map<gpu::Basis, int> &t, const gpu::Basis &c,
                  const char *what) {
    auto it = t.find(c);
    if (it == t.end()) {
      std::string s;
      for (int64_t x : c)
        s += (s.empty() ? "" : ", ") + std::to_string(x);
      e.internalError(op, std::string("the ") + what +
                              " layout holds no register for (" + s + ")");
    }
    return it->second;
  };
  const Regs &A = e.regs(op.operand(0)), &B = e.regs(op.operand(1)),
             &C = e.regs(op.operand(2));
  int64_t K = op.operand(0)->type()->shape()[rank - 1];
  DType da = op.operand(0)->type()->element()->dtype();
  DType db = op.operand(1)->type()->element()->dtype();
  DType dc = op.result(0)->type()->element()->dtype();
  // Float operands compute in the accumulator's precision (fp64, else
  // fp32: an fp16 accumulator sums in fp32 and rounds once at the end).
  bool isInt = isInteger(dc);
  bool f64 = dc == DType::FP64;
  // fp32 "tf32": the operands rounded to tf32 on sm_80 and newer (what a
  // rank-2 dot's mma.sync computes with). "tf32x3" keeps full fp32 here,
  // which is at least as accurate as its three products.
  bool tf32 = op.hasAttr("input_precision") &&
              op.strAttr("input_precision") == "tf32" && e.opts.target.sm >= 80;
  auto widen = [&](DType t, const std::string &r) -> std::string {
    if (isInt) {
      std::string x = e.reg(RC::B32);
      e.ins(std::string("cvt.s32.s16 ") + x + ", " + r);
      return x;
    }
    if (f64) {
      if (t == DType::FP64)
        return r;
      std::string x = e.reg(RC::F64);
      e.ins("cvt.f64.f32 " + x + ", " + toF32(e, op, t, r));
      return x;
    }
    if (t == DType::FP32 && tf32) {
      // The operands the tensor cores would see (as the executor rounds
      // them); the products and sums stay fp32.
      std::string b = e.reg(RC::B32), x = e.reg(RC::F32);
      e.ins("cvt.rna.tf32.f32 " + b + ", " + r);
      e.ins("mov.b32 " + x + ", " + b);
      return x;
    }
    return toF32(e, op, t, r);
  };
  std::map<int, std::string> wa, wb;
  auto opA = [&](int r) {
    auto it = wa.find(r);
    return it != wa.end() ? it->second : (wa[r] = widen(da, A[r]));
  };
  auto opB = [&](int r) {
    auto it = wb.find(r);
    return it != wb.end() ? it->second : (wb[r] = widen(db, B[r]));
  };
  Regs out(lc.numRegs());
  std::map<gpu::Basis, std::string> done;
  for (int r = 0; r < lc.numRegs(); ++r) {
    gpu::Basis c = lc.regCoord(r);
    if (auto it = done.find(c); it != done.end()) {
      out[r] = it->second;
      continue;
    }
    std::string acc;
    if (isInt || f64) {
      acc = C[r];
    } else {
      acc = toF32(e, op, dc, C[r]);
    }
    gpu::Basis ca = c, cb = c; // A at [batch, m, k], B at [batch, k, n]
    for (int64_t k = 0; k < K; ++k) {
      ca[nDim] = k;
      cb[mDim] = k;
      std::string a = opA(find(ta, ca, "A"));
      std::string b = opB(find(tb, cb, "B"));
      std::string d = e.reg(isInt ? RC::B32 : f64 ? RC::F64 : RC::F32);
      if (isInt)
        e.ins("mad.lo.s32 " + d + ", " + a + ", " + b + ", " + acc);
      else
        e.ins(std::string(f64 ? "fma.rn.f64 " : "fma.rn.f32 ") + d + ", " +
              a + ", " + b + ", " + acc);
      acc = d;
    }
    if (!isInt && !f64)
      acc = fromF32(e, op, dc, acc);
    out[r] = done[c] = acc;
  }
  e.bind(op.result(0), std::move(out));
}

} // namespace

bool emitDot(Emitter &e, Operation &op) {
  if (op.code() == OpCode::WarpGroupDot) {
    auto *mma = dynamic_cast<const gpu::NvidiaMmaLayout *>(
        gpu::layoutOf(op.result(0)->type()));
    if (!mma || mma->versionMajor != 3)
      e.internalError(op, "needs a version-3 nvidia_mma accumulator");
    WgmmaDot(e, op, mma).emit();
    return true;
  }
  if (op.code() != OpCode::Dot)
    return false;
  const gpu::GPULayout *l = gpu::layoutOf(op.result(0)->type());
  auto *mma = dynamic_cast<const gpu::NvidiaMmaLayout *>(l);
  if (mma && mma->versionMajor == 2) {
    MmaDot(e, op).emit();
  } else if (mma) {
    e.internalError(op, "wgmma (nvidia_mma version 3) dots are not lowered "
                        "yet");
  } else {
    emitFmaDot(e, op);
  }
  return true;
}

} // namespace tritium::nvidia
