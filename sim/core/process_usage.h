// What this process has used so far (getrusage): CPU time of all its threads, its peak resident memory and
// the pages it touched first (on a virtual machine each such fault can cost several microseconds).
#pragma once

#include <sys/resource.h>

namespace kvtier {

struct ProcessUsage {
  double cpu_s = 0;           // user + system, every thread
  double peak_rss_bytes = 0;  // the high-water mark of resident memory
  double system_s = 0;        // the part of cpu_s spent in the kernel
  double minor_faults = 0;    // pages mapped on first touch, without I/O
};

inline ProcessUsage process_usage() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  // ru_maxrss is in KiB on Linux.
  return {seconds(usage.ru_utime) + seconds(usage.ru_stime), 1024.0 * static_cast<double>(usage.ru_maxrss),
          seconds(usage.ru_stime), static_cast<double>(usage.ru_minflt)};
}

}  // namespace kvtier
