// What transfers put on links: the bytes started on each link (a transfer counts whole when it starts,
// a cancelled one too), and the bytes each link has actually carried up to now (the progress of every
// transfer over it), so that the difference between two readings over bandwidth x elapsed time is the
// link's mean utilisation between them. Links are indices into the owner's list.
#pragma once

#include <simgrid/s4u.hpp>
#include <vector>

namespace kvtier {

class FlowMeter {
 public:
  explicit FlowMeter(size_t links) : link_bytes_(links, 0), carried_(links, 0) {}

  // A transfer of `bytes` just started over `route` (indices; the vector must outlive the transfer) as
  // `comm`, which moves `comm_bytes` (the whole bytes SimGrid was given).
  void start(const simgrid::s4u::CommPtr& comm, const std::vector<int>& route, double bytes,
             double comm_bytes);
  // Counts what `comm` had carried before it is cancelled; false when it is not one of this meter's.
  bool cancel(const simgrid::s4u::CommPtr& comm);

  const std::vector<double>& link_bytes() const { return link_bytes_; }
  std::vector<double> carried_bytes();

 private:
  // A transfer whose progress is not yet all in carried_: the Comm, the links it crosses, its size and
  // the bytes of it already counted.
  struct Flow {
    simgrid::s4u::CommPtr comm;
    const std::vector<int>* links;
    double bytes = 0;
    double counted = 0;
  };
  void count(Flow& flow, double done);
  void prune();

  std::vector<double> link_bytes_;
  std::vector<double> carried_;
  std::vector<Flow> flows_;
  // start() prunes flows_ when it reaches this size, so that it stays within twice the flows moving.
  size_t prune_at_ = 64;
};

}  // namespace kvtier
