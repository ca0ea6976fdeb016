// tritium-opt: parse tile or GPU IR text, run passes, print the result (or
// the PTX of its kernels).
//
//   tritium-opt [file|-] [--<pass> ...] [--pass-pipeline=a,b,c]
//               [--default-pipeline] [--no-verify] [--stats]
//               [--print-after=<pass|all>] [--no-locations] [-o out]
//               [--target=sm_90a] [--num-warps=4] [--num-stages=3]
//               [--bounds-check] [--no-fp-fusion] [--emit-ptx]
//
// With no pass it parses, verifies and prints (a round trip). The options
// (--target, --num-warps, ...) reach every pass; --emit-ptx runs the rest of
// the compile (compileKernel: GPU passes unless the IR has layouts already,
// shared memory, PTX) on every kernel after the passes given. Errors go to
// stderr as `file:line:col: error: message`, exit status 1.
#include "tritium/analysis/axis_info_printer.h"
#include "tritium/gpu/layouts.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"
#include "tritium/target/nvidia/pipeline.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

using namespace tritium;

namespace {

struct Options {
  std::string input = "-";
  std::string output = "-";
  std::vector<std::string> passes;
  std::vector<std::string> printAfter;
  bool verify = true;
  bool stats = false;
  bool locations = true;
  bool splitInput = false;
  bool emitPtx = false;
  PipelineOptions pipeline; // target, warps, stages, bounds checks
};

/// Passes that only tests run: they print what an analysis found.
const PassTable &testPasses() {
  static const PassTable passes = {
      {"test-print-axis-info",
       "Print the axis info of every integer and pointer value to stderr",
       [](Module &m, const PipelineOptions &, PassStats &) {
         for (auto &f : m.functions())
           std::cerr << axisInfoReport(*f);
       }},
  };
  return passes;
}

/// The passes the tool knows: every pass of the compiler, then the test
/// passes.
const PassTable &toolPasses() {
  static const PassTable passes = [] {
    PassTable all = allPasses();
    for (const PassInfo &p : testPasses())
      all.push_back(p);
    return all;
  }();
  return passes;
}

void printHelp(std::ostream &os) {
  os << "usage: tritium-opt [file|-] [options]\n\n"
        "Reads tile IR (stdin when no file or `-`), runs the passes given,\n"
        "in order, and prints the IR.\n\n"
        "options:\n"
        "  --<pass>                 run one pass (see below)\n"
        "  --pass-pipeline=a,b,c    run these passes in order\n"
        "  --default-pipeline       run the frontend's pipeline:";
  for (const std::string &p : defaultPipeline())
    os << " " << p;
  os << "\n"
        "  --no-verify              skip the verifier (after parsing and "
        "after each pass)\n"
        "  --stats                  print pass counters to stderr\n"
        "  --print-after=<pass|all> print the IR to stderr after that pass\n"
        "                           (the GPU passes of --emit-ptx too)\n"
        "  --target=<sm_XX>         GPU target (default sm_90a)\n"
        "  --num-warps=<n>          warps per program (default 4)\n"
        "  --num-stages=<n>         pipeline stages (default 3)\n"
        "  --bounds-check           check every global access (debug "
        "builds)\n"
        "  --disable-passes=a,b     leave out these steps of the passes run\n"
        "                           (TRITIUM_DISABLE_PASSES: stage-vectors,\n"
        "                           hoist-slice of --pipeline)\n"
        "  --no-fp-fusion           Triton's enable_fp_fusion=False: no fma\n"
        "                           from a * b + c, every add/mul rounds\n"
        "  --emit-ptx               after the passes, compile every kernel "
        "and\n"
        "                           print its PTX instead of the IR\n"
        "  --no-locations           omit loc(...) in the output\n"
        "  --split-input-file       treat each `// -----`-separated chunk as "
        "its own module\n"
        "                           (errors of one chunk do not stop the "
        "others)\n"
        "  -o <file>                write the output to <file>\n"
        "  --help                   this text\n\n"
        "passes:\n";
  for (const PassInfo &p : toolPasses()) {
    std::string flag = "  --" + p.name;
    int pad = std::max(2, 29 - (int)flag.size());
    os << flag << std::string(pad, ' ') << p.description << "\n";
  }
}

/// Prints a user-facing diagnostic: `file:line:col: error: message`.
void report(const Location &loc, const std::string &fallbackFile,
            const std::string &msg) {
  if (loc.known())
    std::cerr << (loc.file.empty() ? fallbackFile : loc.file) << ":"
              << loc.line << ":" << loc.col << ": error: " << msg << "\n";
  else
    std::cerr << fallbackFile << ": error: " << msg << "\n";
}

[[noreturn]] void usageError(const std::string &msg) {
  std::cerr << "tritium-opt: error: " << msg
            << " (see tritium-opt --help)\n";
  std::exit(1);
}

void addPass(Options &o, const std::string &name) {
  if (!lookupPass(toolPasses(), name))
    usageError("unknown pass '" + name + "'");
  o.passes.push_back(name);
}

int intOption(const std::string &flag, const std::string &v) {
  try {
    size_t used = 0;
    int n = std::stoi(v, &used);
    if (used == v.size())
      return n;
  } catch (const std::exception &) {
  }
  usageError(flag + " needs an integer, got '" + v + "'");
}

Options parseArgs(int argc, char **argv) {
  Options o;
  bool haveInput = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto valueOf = [&](const std::string &prefix) -> std::optional<std::string> {
      if (a.rfind(prefix, 0) == 0)
        return a.substr(prefix.size());
      return std::nullopt;
    };
    // `--flag=value` or `--flag value`.
    auto option = [&](const std::string &flag) -> std::optional<std::string> {
      if (a == flag) {
        if (i + 1 >= argc)
          usageError(flag + " needs a value");
        return std::string(argv[++i]);
      }
      return valueOf(flag + "=");
    };
    if (a == "--help" || a == "-h") {
      printHelp(std::cout);
      std::exit(0);
    } else if (a == "-o") {
      if (i + 1 >= argc)
        usageError("-o needs a file name");
      o.output = argv[++i];
    } else if (auto v = valueOf("-o"); v && a.size() > 2 && a[1] == 'o') {
      o.output = *v;
    } else if (a == "--no-verify") {
      o.verify = false;
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--no-locations") {
      o.locations = false;
    } else if (a == "--split-input-file") {
      o.splitInput = true;
    } else if (a == "--emit-ptx") {
      o.emitPtx = true;
    } else if (a == "--bounds-check") {
      o.pipeline.boundsCheck = true;
    } else if (a == "--no-fp-fusion") {
      o.pipeline.enableFpFusion = false;
    } else if (auto v = option("--target")) {
      try {
        o.pipeline.target = GPUTarget::parse(*v);
      } catch (const UserError &e) {
        usageError(std::string("--target: ") + e.what());
      }
    } else if (auto v = option("--num-warps")) {
      o.pipeline.numWarps = intOption("--num-warps", *v);
    } else if (auto v = option("--num-stages")) {
      o.pipeline.numStages = intOption("--num-stages", *v);
    } else if (a == "--default-pipeline") {
      for (const std::string &p : defaultPipeline())
        addPass(o, p);
    } else if (auto v = valueOf("--pass-pipeline=")) {
      std::stringstream ss(*v);
      std::string name;
      while (std::getline(ss, name, ','))
        if (!name.empty())
          addPass(o, name);
    } else if (auto v = valueOf("--disable-passes=")) {
      // TRITIUM_DISABLE_PASSES's names: steps inside a pass (e.g. the
      // pipeliner's stage-vectors, hoist-slice) that a pass reads.
      std::stringstream ss(*v);
      std::string name;
      while (std::getline(ss, name, ','))
        if (!name.empty())
          o.pipeline.skipPasses.push_back(name);
    } else if (auto v = valueOf("--print-after=")) {
      if (*v != "all" && !lookupPass(toolPasses(), *v))
        usageError("--print-after: unknown pass '" + *v + "'");
      o.printAfter.push_back(*v);
    } else if (a.rfind("--", 0) == 0 && a.size() > 2) {
      addPass(o, a.substr(2));
    } else if (a == "-" || a[0] != '-') {
      if (haveInput)
        usageError("more than one input file");
      o.input = a;
      haveInput = true;
    } else {
      usageError("unknown option '" + a + "'");
    }
  }
  return o;
}

std::string readInput(const std::string &path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << path << ": error: cannot open file\n";
    std::exit(1);
  }
  ss << in.rdbuf();
  return ss.str();
}

/// The PTX of every kernel of `m` as one PTX module: the first kernel's
/// header (.version, .target, .address_size) and the shared-memory
/// declaration once, so that ptxas assembles the whole. The .version is the
/// highest any kernel asked for (a kernel with sm_90 vector atomics needs
/// PTX 8.1).
std::string emitPTX(Module &m, const PipelineOptions &opts, PassStats &stats) {
  PipelineInput input =
      isGPUIR(m) ? PipelineInput::GPUIR : PipelineInput::OptimizedTileIR;
  std::vector<std::string> kernels;
  for (auto &f : m.functions()) {
    auto it = f->attrs().find("kernel");
    if (it != f->attrs().end() && std::holds_alternative<bool>(it->second) &&
        std::get<bool>(it->second))
      kernels.push_back(f->name());
  }
  if (kernels.empty())
    throw UserError("--emit-ptx: no kernel (a function with kernel = true) "
                    "in the module",
                    {});
  std::string out, version;
  bool haveShared = false;
  for (size_t k = 0; k < kernels.size(); ++k) {
    CompileResult r = compileKernel(m, kernels[k], opts, input);
    for (const auto &[name, n] : r.stats.counters)
      stats.add(name, n);
    std::istringstream lines(r.kernel.ptx);
    std::string line;
    while (std::getline(lines, line)) {
      bool header = line.rfind(".version", 0) == 0 ||
                    line.rfind(".target", 0) == 0 ||
                    line.rfind(".address_size", 0) == 0;
      bool shared = line.rfind(".extern .shared", 0) == 0;
      // "8.1" > "8.0": one digit each side of the point, compared as text.
      if (line.rfind(".version", 0) == 0 && line > version)
        version = line;
      if ((header && k > 0) || (shared && haveShared))
        continue;
      haveShared |= shared;
      out += line + "\n";
    }
  }
  size_t at = out.find(".version");
  if (at != std::string::npos)
    out.replace(at, out.find('\n', at) - at, version);
  return out;
}

/// Parses, verifies and transforms one module; appends its text to `out`.
/// Returns false after reporting an error.
bool processModule(const std::string &text, const std::string &displayName,
                   const Options &o, PassStats &stats, std::string &out) {
  PrintOptions printOpts;
  printOpts.printLocations = o.locations;
  std::unique_ptr<Module> m;
  try {
    m = parseModule(text, displayName);
    if (o.verify)
      verify(*m);
  } catch (const IRError &e) {
    report(e.loc, displayName, e.what());
    return false;
  }

  PipelineOptions opts = o.pipeline;
  opts.verifyEach = o.verify;
  opts.printAfter = o.printAfter;
  opts.dump = [&](const std::string &pass, const Module &dumped) {
    std::cerr << "// -----// IR Dump After " << pass << " //----- //\n"
              << print(dumped, printOpts) << "\n"
              << std::flush;
  };
  std::string text2;
  try {
    runPasses(*m, o.passes, stats, opts, toolPasses());
    text2 = o.emitPtx ? emitPTX(*m, opts, stats) : print(*m, printOpts);
  } catch (const UserError &e) {
    report(e.loc, displayName, e.what());
    return false;
  } catch (const IRError &e) {
    report(e.loc, displayName, e.what());
    return false;
  } catch (const std::exception &e) {
    report({}, displayName, std::string("internal error: ") + e.what());
    return false;
  }
  if (!text2.empty() && text2.back() != '\n')
    text2 += '\n';
  out += text2;
  return true;
}

/// Splits at lines `// -----`. Each chunk is padded with the newlines of the
/// chunks before it, so that parse errors keep the file's line numbers.
std::vector<std::string> splitChunks(const std::string &text) {
  std::vector<std::string> chunks;
  std::string current;
  int lineNo = 0, chunkStart = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::string trimmed = line;
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\r'))
      trimmed.pop_back();
    if (trimmed == "// -----") {
      chunks.push_back(std::string(chunkStart, '\n') + current);
      current.clear();
      chunkStart = lineNo + 1;
    } else {
      current += line + "\n";
    }
    ++lineNo;
  }
  chunks.push_back(std::string(chunkStart, '\n') + current);
  return chunks;
}

int run(const Options &o) {
  std::string displayName = o.input == "-" ? "<stdin>" : o.input;
  std::string text = readInput(o.input);
  std::vector<std::string> chunks =
      o.splitInput ? splitChunks(text) : std::vector<std::string>{text};

  PassStats stats;
  std::string out;
  bool ok = true;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i > 0)
      out += "// -----\n";
    ok &= processModule(chunks[i], displayName, o, stats, out);
  }
  if (!ok && !o.splitInput)
    return 1;

  if (o.output == "-") {
    std::cout << out << std::flush;
  } else {
    std::ofstream f(o.output, std::ios::binary);
    if (!f || !(f << out)) {
      std::cerr << o.output << ": error: cannot write file\n";
      return 1;
    }
  }
  if (o.stats) {
    std::cerr << "// ----- pass statistics ----- //\n";
    for (const auto &[name, n] : stats.counters)
      std::cerr << name << " = " << n << "\n";
  }
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  tritium::gpu::registerLayoutParser(); // so GPU IR round-trips too
  try {
    return run(parseArgs(argc, argv));
  } catch (const std::exception &e) {
    std::cerr << "tritium-opt: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "tritium-opt: internal error: unknown exception\n";
  }
  return 1;
}
