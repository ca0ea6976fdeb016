// Running ptxas: PTX text in a private temporary directory, ptxas started
// with posix_spawn (no shell: no quoting issues), its output read back.
#include "tritium/runtime/ptxas.h"

#include "tritium/support/errors.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

extern char **environ;

namespace tritium::runtime {

namespace {

bool isExecutable(const std::string &path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> searchPath(const std::string &name) {
  const char *path = std::getenv("PATH");
  if (!path)
    return std::nullopt;
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty())
      continue;
    std::string candidate = dir + "/" + name;
    if (isExecutable(candidate))
      return candidate;
  }
  return std::nullopt;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), (std::streamsize)data.size());
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

// Runs argv with stdout and stderr to `logPath`; returns the exit status
// (-1 when it could not start, 128+signal when killed).
int spawn(const std::vector<std::string> &argv, const std::string &logPath,
          std::string *startError) {
  std::vector<char *> cargv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (startError)
      *startError = std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      if (startError)
        *startError = std::strerror(errno);
      return -1;
    }
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

// A private (0700) temporary directory, removed with its files on scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    std::string base = std::filesystem::temp_directory_path().string() + "/tritium-ptxas-XXXXXX";
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      throw std::runtime_error(std::string("cannot create a temporary directory: ") +
                               std::strerror(errno));
    path = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

} // namespace

std::optional<std::string> findPtxas() {
  static const std::optional<std::string> found = []() -> std::optional<std::string> {
    if (const char *env = std::getenv("TRITIUM_PTXAS")) {
      std::string v = env;
      if (v.empty() || v == "0")
        return std::nullopt;
      if (v.find('/') == std::string::npos)
        return searchPath(v);
      return isExecutable(v) ? std::optional<std::string>(v) : std::nullopt;
    }
    if (isExecutable("/usr/local/cuda/bin/ptxas"))
      return std::string("/usr/local/cuda/bin/ptxas");
    return searchPath("ptxas");
  }();
  return found;
}

std::string ptxasVersion() {
  static std::once_flag once;
  static std::string version;
  std::call_once(once, [] {
    auto ptxas = findPtxas();
    if (!ptxas)
      return;
    try {
      TempDir dir;
      std::string log = dir.path + "/version.txt";
      if (spawn({*ptxas, "--version"}, log, nullptr) != 0)
        return;
      std::stringstream ss(readFile(log));
      // "Cuda compilation tools, release 13.0, V13.0.88" names the version.
      std::string line, last, release;
      while (std::getline(ss, line)) {
        if (!line.empty())
          last = line;
        if (release.empty() && line.find("release") != std::string::npos)
          release = line;
      }
      version = release.empty() ? last : release;
    } catch (const std::exception &) {
    }
  });
  return version;
}

PtxasResult runPtxas(const std::string &ptx, const std::string &arch,
                     const std::vector<std::string> &extraOptions) {
  auto ptxas = findPtxas();
  if (!ptxas)
    throw std::runtime_error("ptxas not found (set TRITIUM_PTXAS or install the CUDA toolkit)");
  TempDir dir;
  std::string in = dir.path + "/kernel.ptx";
  std::string out = dir.path + "/kernel.cubin";
  std::string log = dir.path + "/ptxas.log";
  writeFile(in, ptx);
  std::vector<std::string> argv = {*ptxas, "-arch=" + arch, "-O3", "-v"};
  argv.insert(argv.end(), extraOptions.begin(), extraOptions.end());
  argv.insert(argv.end(), {in, "-o", out});
  std::string startError;
  int rc = spawn(argv, log, &startError);
  if (rc < 0)
    throw std::runtime_error("cannot run " + *ptxas + ": " + startError);
  PtxasResult result;
  result.log = readFile(log);
  if (rc != 0) {
    // Keep the PTX line numbers readable: ptxas names the temp file.
    std::string msg = result.log;
    for (size_t pos; (pos = msg.find(in)) != std::string::npos;)
      msg.replace(pos, in.size(), "<ptx>");
    throw InternalError("ptxas (" + *ptxas + " -arch=" + arch + ") rejected the generated PTX (exit " +
                        std::to_string(rc) + "); this is a tritium bug:\n" + msg);
  }
  result.cubin = readFile(out);
  if (result.cubin.empty())
    throw std::runtime_error("ptxas succeeded but wrote no cubin");
  return result;
}

} // namespace tritium::runtime
