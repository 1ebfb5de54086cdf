// run_isolated's children against failures and signals: none is left running, whatever ends the run,
// and the signal handlers come back as they were.
#include "sim/engine/isolated_run.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace kvtier {
namespace {

// True when this process has no child left, running or unreaped.
bool no_children_left() { return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

volatile std::sig_atomic_t g_recorded = 0;
extern "C" void record_signal(int signal) { g_recorded = signal; }

// Installs `handler` for `signal` for the scope of one test, and puts back what was there.
class SignalDisposition {
 public:
  SignalDisposition(int signal, void (*handler)(int)) : signal_(signal) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, &saved_);
  }
  ~SignalDisposition() { sigaction(signal_, &saved_, nullptr); }
  static void (*current(int signal))(int) {
    struct sigaction now {};
    sigaction(signal, nullptr, &now);
    return now.sa_handler;
  }

 private:
  int signal_;
  struct sigaction saved_ {};
};

TEST(IsolatedRun, ADeadChildStopsItsSiblings) {
  std::vector<Simulation> simulations{[]() -> nlohmann::json { _exit(3); },
                                      []() -> nlohmann::json {
                                        sleep(20);
                                        return 1;
                                      }};
  EXPECT_THROW(run_isolated(simulations, 2), std::runtime_error);
  EXPECT_TRUE(no_children_left());
}

TEST(IsolatedRun, ATerminationSignalStopsEveryChildAndIsDeliveredAgainAfterwards) {
  SignalDisposition recorder(SIGTERM, record_signal);
  g_recorded = 0;
  {
    TerminationSignals signals;
    std::vector<Simulation> simulations{[]() -> nlohmann::json {
                                          kill(getppid(), SIGTERM);
                                          pause();
                                          return 1;
                                        },
                                        []() -> nlohmann::json {
                                          pause();
                                          return 2;
                                        }};
    try {
      run_isolated(simulations, 2);
      ADD_FAILURE() << "run_isolated returned";
    } catch (const Interrupted& e) {
      EXPECT_EQ(e.signal, SIGTERM);
    }
    EXPECT_TRUE(no_children_left());
    EXPECT_EQ(TerminationSignals::caught(), SIGTERM);
    EXPECT_EQ(g_recorded, 0);  // held while the guard is alive
  }
  EXPECT_EQ(g_recorded, SIGTERM);
  EXPECT_EQ(SignalDisposition::current(SIGTERM), &record_signal);
}

TEST(IsolatedRun, AnIgnoredSignalStaysIgnored) {
  SignalDisposition ignored(SIGHUP, SIG_IGN);
  TerminationSignals signals;
  EXPECT_EQ(SignalDisposition::current(SIGHUP), SIG_IGN);
  EXPECT_NE(SignalDisposition::current(SIGINT), SIG_IGN);
}

TEST(IsolatedRun, ChildrenGetTheSignalHandlersOfBefore) {
  SignalDisposition recorder(SIGINT, record_signal);
  TerminationSignals signals;
  nlohmann::json seen = run_isolated([]() -> nlohmann::json {
    return SignalDisposition::current(SIGINT) == &record_signal;
  });
  EXPECT_EQ(seen, true);
}

}  // namespace
}  // namespace kvtier
