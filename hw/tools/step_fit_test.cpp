#include "hw/tools/step_fit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "hw/tools/calibration_run.h"
#include "hw/tools/step_probe.h"
#include "sim/core/config_files.h"
#include "sim/core/kv_layout.h"

namespace kvtier::hw {
namespace {

struct ModelOnH200 {
  ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  HardwareConfig hardware = parse_hardware(load_config("h200", "configs/hardware"));
  double kv_bytes_per_token = static_cast<double>(resolve_kv_layout(model, "bf16").bytes_per_token());
};

const StepCosts kTruth = {.step_overhead_s = 0.3e-3,
                          .linear_mfu = 0.62,
                          .attention_mfu = 0.42,
                          .attention_half_rate_keys = 1100,
                          .attention_half_rate_queries = 600,
                          .attention_bandwidth_efficiency = 0.8};

// The probe's steps timed as if the GPU ran the cost model with kTruth, each off by up to `noise`.
std::vector<StepSample> synthetic_steps(const ModelOnH200& setup, double noise) {
  const CostModel truth(setup.model, setup.hardware, setup.kv_bytes_per_token, kTruth);
  std::mt19937 random(7);
  std::uniform_real_distribution<double> error(-noise, noise);
  std::vector<StepSample> steps = probe_steps(640 * 1024);
  for (StepSample& s : steps) s.seconds = truth.step_seconds(s.work()) * (1 + error(random));
  return steps;
}

TEST(StepFit, ProbeStepsFitThePoolTheyAreGiven) {
  EXPECT_EQ(probe_steps(640 * 1024).size(), 16u + 4u + 20u + 5u + 1u);
  // 81,920 tokens hold the longest prefill (16K after 64K) and decode batches up to 8 × 8K, 64 × 1K.
  for (const StepSample& s : probe_steps(81920)) EXPECT_LE(s.kv_tokens(), 81920) << s.kind();
  EXPECT_TRUE(probe_steps(0).empty());
  StepSample mixed{.prefill_sequences = 2,
                   .new_tokens = 100,
                   .cached_tokens = 50,
                   .decode_sequences = 3,
                   .decode_context = 10};
  EXPECT_EQ(mixed.kv_tokens(), 2 * 150 + 3 * 11);
  EXPECT_EQ(mixed.work().tokens(), 203);
  EXPECT_EQ(mixed.work().decode_context, 30);
  EXPECT_STREQ(mixed.kind(), "mixed");
}

TEST(StepFit, RecoversExactCostsFromExactTimes) {
  const ModelOnH200 setup;
  const StepFit fit =
      fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, synthetic_steps(setup, 0));
  EXPECT_NEAR(fit.costs.step_overhead_s, kTruth.step_overhead_s, 1e-9);
  EXPECT_NEAR(fit.costs.linear_mfu / kTruth.linear_mfu, 1, 1e-6);
  EXPECT_NEAR(fit.costs.attention_mfu / kTruth.attention_mfu, 1, 1e-6);
  EXPECT_NEAR(fit.costs.attention_half_rate_keys / kTruth.attention_half_rate_keys, 1, 1e-6);
  EXPECT_NEAR(fit.costs.attention_half_rate_queries / kTruth.attention_half_rate_queries, 1, 1e-6);
  EXPECT_NEAR(fit.costs.attention_bandwidth_efficiency / kTruth.attention_bandwidth_efficiency, 1, 1e-6);
}

TEST(StepFit, RecoversKnownCostsThroughHalfAPercentOfNoise) {
  const ModelOnH200 setup;
  const StepFit fit =
      fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, synthetic_steps(setup, 0.005));
  EXPECT_NEAR(fit.costs.step_overhead_s, kTruth.step_overhead_s, 50e-6);
  EXPECT_NEAR(fit.costs.linear_mfu / kTruth.linear_mfu, 1, 0.01);
  EXPECT_NEAR(fit.costs.attention_mfu / kTruth.attention_mfu, 1, 0.02);
  // The half-rate keys move a step's time least (attention is a small share of the short prefills where
  // they matter), so noise moves them most; the predicted times stay within the noise.
  EXPECT_NEAR(fit.costs.attention_half_rate_keys / kTruth.attention_half_rate_keys, 1, 0.3);
  EXPECT_NEAR(fit.costs.attention_half_rate_queries / kTruth.attention_half_rate_queries, 1, 0.3);
  EXPECT_NEAR(fit.costs.attention_bandwidth_efficiency / kTruth.attention_bandwidth_efficiency, 1, 0.02);
  const CostModel truth(setup.model, setup.hardware, setup.kv_bytes_per_token, kTruth);
  const std::vector<StepSample> steps = probe_steps(640 * 1024);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_NEAR(fit.predicted_seconds[i] / truth.step_seconds(steps[i].work()), 1, 0.005)
        << steps[i].kind() << " " << i;
}

TEST(StepFit, EachStoredResidualIsMeasuredMinusPredicted) {
  const ModelOnH200 setup;
  const std::vector<StepSample> steps = synthetic_steps(setup, 0.02);
  const StepFit fit = fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, steps);
  const nlohmann::json json = step_measurements_json(steps, fit);
  ASSERT_EQ(json.size(), steps.size());
  const CostModel fitted(setup.model, setup.hardware, setup.kv_bytes_per_token, fit.costs);
  for (size_t i = 0; i < steps.size(); ++i) {
    const double predicted = fitted.step_seconds(steps[i].work());
    EXPECT_EQ(json[i]["seconds"].get<double>(), steps[i].seconds);
    EXPECT_EQ(json[i]["predicted_seconds"].get<double>(), predicted);
    EXPECT_EQ(json[i]["residual_seconds"].get<double>(), steps[i].seconds - predicted);
    EXPECT_EQ(json[i]["kind"], steps[i].kind());
    EXPECT_EQ(json[i]["decode_sequences"], steps[i].decode_sequences);
  }
}

TEST(StepFit, RefusesMeasurementsThatCannotDetermineTheRates) {
  const ModelOnH200 setup;
  std::vector<StepSample> prefill_only;
  for (const StepSample& s : synthetic_steps(setup, 0)) {
    if (s.decode_sequences == 0) prefill_only.push_back(s);
  }
  EXPECT_THROW(fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, prefill_only),
               std::invalid_argument);
  std::vector<StepSample> unmeasured = probe_steps(640 * 1024);
  EXPECT_THROW(fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, unmeasured),
               std::invalid_argument);
}

// A calibration run of the probe's steps timed within 1 % of kTruth.
CalibrationRun synthetic_run(const ModelOnH200& setup) {
  CalibrationRun run;
  run.reference = setup.hardware;
  run.step_model = setup.model;
  run.steps = synthetic_steps(setup, 0.01);
  return run;
}

TEST(StepFit, TheCalibrationFileReproducesEachStoredPrediction) {
  const ModelOnH200 setup;
  CalibrationRun run = synthetic_run(setup);
  const nlohmann::json file = summarize_calibration(run);
  const Calibration back = parse_calibration(file.dump(2), "calibration.json");
  ASSERT_TRUE(back.serving);
  EXPECT_EQ(back.serving->model, "Llama-3.1-8B");
  const CostModel from_file(setup.model, setup.hardware, setup.kv_bytes_per_token,
                            *serving_step_costs(back, setup.model));
  const nlohmann::json& steps = back.measurements.at("steps");
  ASSERT_EQ(steps.size(), run.steps.size());
  for (size_t i = 0; i < run.steps.size(); ++i) {
    EXPECT_EQ(steps[i]["predicted_seconds"].get<double>(), from_file.step_seconds(run.steps[i].work())) << i;
    EXPECT_EQ(steps[i]["residual_seconds"].get<double>(),
              run.steps[i].seconds - from_file.step_seconds(run.steps[i].work()))
        << i;
  }
  run.steps.clear();
  EXPECT_FALSE(nlohmann::json(summarize_calibration(run)).contains("serving")) << "no steps, no fit";
}

// The probe runs one GPU whatever the reference card's node holds: on a card of eight (as the H100's and
// the MI355X's are), the fit gives the costs the steps were timed with, as on the card of one.
TEST(StepFit, TheFitPricesOneGpuOnACardOfEight) {
  const ModelOnH200 setup;
  CalibrationRun run = synthetic_run(setup);
  run.steps = synthetic_steps(setup, 0);
  run.reference.gpu.count = 8;
  const Calibration back = parse_calibration(nlohmann::json(summarize_calibration(run)).dump(), "c.json");
  ASSERT_TRUE(back.serving);
  const StepCosts fitted = *serving_step_costs(back, setup.model);
  EXPECT_NEAR(fitted.linear_mfu / kTruth.linear_mfu, 1, 1e-6);
  EXPECT_NEAR(fitted.step_overhead_s, kTruth.step_overhead_s, 1e-9);
}

// The H200's attention tiling (one block of either kernel on each of 132 multiprocessors), with costs.
AttentionCosts attention_truth() {
  return {.query_rows = 128,
          .multiprocessors = 132,
          .max_splits = 64,
          .min_split_keys = 256,
          .unsplit = {.key_tile = 128, .slots = 132, .launch_s = 6e-6, .block_s = 3e-6, .key_tile_s = 2.2e-6},
          .split = {.key_tile = 64, .slots = 132, .launch_s = 11e-6, .block_s = 1.5e-6, .key_tile_s = 2e-6}};
}

// Steps timed as if the GPU ran the cost model with kTruth's overhead and linear rate and attention_truth():
// whole steps off by up to `noise`, their attention (all 32 layers) exact.
std::vector<StepSample> steps_with_attention(const ModelOnH200& setup, double noise) {
  const StepCosts costs{.step_overhead_s = kTruth.step_overhead_s,
                        .linear_mfu = kTruth.linear_mfu,
                        .attention = attention_truth()};
  const CostModel truth(setup.model, setup.hardware, setup.kv_bytes_per_token, costs);
  std::mt19937 random(5);
  std::uniform_real_distribution<double> error(-noise, noise);
  std::vector<StepSample> steps = probe_steps(640 * 1024);
  for (StepSample& s : steps) {
    s.seconds = truth.step_seconds(s.work()) * (1 + error(random));
    s.attention_seconds = 32 * attention_launch_seconds(attention_truth(), 8, 4, s.attention_sequences());
  }
  return steps;
}

TEST(StepFit, WithTimedAttentionFitsTheKernelsAndTheRestBesideThem) {
  const ModelOnH200 setup;
  AttentionCosts tiling = attention_truth();
  tiling.unsplit = {.key_tile = 128, .slots = 132};
  tiling.split = {.key_tile = 64, .slots = 132};
  const std::vector<StepSample> steps = steps_with_attention(setup, 0);
  const StepFit fit = fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, steps, tiling);
  EXPECT_NEAR(fit.costs.step_overhead_s, kTruth.step_overhead_s, 1e-9);
  EXPECT_NEAR(fit.costs.linear_mfu / kTruth.linear_mfu, 1, 1e-6);
  ASSERT_TRUE(fit.costs.attention);
  EXPECT_NEAR(fit.costs.attention->unsplit.key_tile_s / 2.2e-6, 1, 1e-4);
  EXPECT_NEAR(fit.costs.attention->split.block_s / 1.5e-6, 1, 1e-4);
  EXPECT_EQ(fit.costs.attention_mfu, 0) << "the formula's attention is not fitted beside the model";
  ASSERT_EQ(fit.predicted_attention_seconds.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_NEAR(fit.predicted_seconds[i] / steps[i].seconds, 1, 1e-6) << steps[i].kind() << " " << i;
    EXPECT_NEAR(fit.predicted_attention_seconds[i] / steps[i].attention_seconds, 1, 1e-4) << i;
  }
  const nlohmann::json json = step_measurements_json(steps, fit);
  EXPECT_EQ(json[3]["attention_seconds"].get<double>(), steps[3].attention_seconds);
  EXPECT_EQ(json[3]["predicted_attention_seconds"].get<double>(), fit.predicted_attention_seconds[3]);
}

// Under a throttle, the whole steps timed from a cool GPU slow past the onset (attention more than the
// rest), while each step's attention timed alone runs at the boost clock, as it does on the GPU: the
// kernels' costs are fitted to those times as they are, not slowed back.
TEST(StepFit, AttentionTimedAloneIsTakenAtTheBoostClock) {
  const ModelOnH200 setup;
  const PowerThrottle throttle{.onset_s = 0.1, .slowdown = 1.1, .attention_slowdown = 1.3};
  const StepCosts costs{.step_overhead_s = kTruth.step_overhead_s,
                        .linear_mfu = kTruth.linear_mfu,
                        .attention = attention_truth()};
  const CostModel truth(setup.model, setup.hardware, setup.kv_bytes_per_token, costs);
  std::vector<StepSample> steps = steps_with_attention(setup, 0);
  int slowed = 0;
  for (StepSample& s : steps) {
    const double boost = s.seconds;
    s.seconds = GpuHeat(throttle).run(boost, truth.compute_bound(s.work()),
                                      truth.prefill_attention_seconds(s.work()));
    slowed += s.prefill_sequences > 0 && s.attention_seconds > throttle.onset_s;
  }
  ASSERT_GE(slowed, 4) << "the probe's long attention runs past the onset";
  AttentionCosts tiling = attention_truth();
  tiling.unsplit = {.key_tile = 128, .slots = 132};
  tiling.split = {.key_tile = 64, .slots = 132};
  const StepFit fit =
      fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, steps, tiling, throttle);
  ASSERT_TRUE(fit.costs.attention);
  EXPECT_NEAR(fit.costs.attention->unsplit.key_tile_s / 2.2e-6, 1, 1e-3);
  EXPECT_NEAR(fit.costs.attention->split.key_tile_s / 2e-6, 1, 1e-3);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_NEAR(fit.predicted_attention_seconds[i] / steps[i].attention_seconds, 1, 1e-3) << i;
}

// kvtier-hw refit: the stored measurements of a file, fitted again by the same fit, give the file's serving
// section back, with the command recorded; a card other than the one the steps ran is refused.
TEST(StepFit, ARefitOfAFilesMeasurementsGivesItsServingCostsBack) {
  const ModelOnH200 setup;
  CalibrationRun run = synthetic_run(setup);
  run.steps = steps_with_attention(setup, 0.01);
  run.attention_tiling = attention_truth();
  run.attention_tiling->unsplit = {.key_tile = 128, .slots = 132};
  run.attention_tiling->split = {.key_tile = 64, .slots = 132};
  run.throttle_chunk_tokens = 4096;
  run.throttle_seconds = {0.09, 0.09, 0.09, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
  const Calibration measured = parse_calibration(nlohmann::json(summarize_calibration(run)).dump(), "c.json");
  const Calibration refitted = refit_serving(measured, setup.model, setup.hardware, "kvtier-hw refit c.json");
  ASSERT_TRUE(refitted.serving);
  EXPECT_EQ(nlohmann::json(refitted).at("serving"), nlohmann::json(measured).at("serving"));
  EXPECT_EQ(refitted.measurements.at("steps"), measured.measurements.at("steps"));
  EXPECT_EQ(refitted.measurements.at("throttle"), measured.measurements.at("throttle"));
  EXPECT_EQ(refitted.measurements.at("refit"), "kvtier-hw refit c.json");
  ModelCard other = setup.model;
  other.name = "Other-8B";
  EXPECT_THROW(refit_serving(measured, other, setup.hardware, "x"), std::invalid_argument);
  Calibration unmeasured = measured;
  unmeasured.measurements.erase("steps");
  EXPECT_THROW(refit_serving(unmeasured, setup.model, setup.hardware, "x"), std::invalid_argument);
  Calibration untimed = measured;
  untimed.measurements["steps"][2].erase("seconds");
  EXPECT_THROW(refit_serving(untimed, setup.model, setup.hardware, "x"), std::invalid_argument);
  Calibration ungapped = measured;
  ungapped.measurements["step_gap"] = "busy";
  EXPECT_THROW(refit_serving(ungapped, setup.model, setup.hardware, "x"), std::invalid_argument);
}

TEST(StepFit, WithoutTimedAttentionTheFormulaIsFitted) {
  const ModelOnH200 setup;
  std::vector<StepSample> steps = synthetic_steps(setup, 0);
  const StepFit fit =
      fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, steps, attention_truth());
  EXPECT_FALSE(fit.costs.attention);
  EXPECT_NEAR(fit.costs.attention_mfu / kTruth.attention_mfu, 1, 1e-6);
  EXPECT_TRUE(fit.predicted_attention_seconds.empty());
}

constexpr PowerThrottle kThrottle{.onset_s = 0.35, .slowdown = 1.12};

TEST(FitThrottle, RecoversTheOnsetAndSlowdownOfBackToBackSteps) {
  GpuHeat heat(kThrottle);
  std::vector<double> seconds;
  for (int i = 0; i < 40; ++i) seconds.push_back(heat.run(0.1, true));
  const PowerThrottle fit = fit_throttle(seconds);
  EXPECT_NEAR(fit.onset_s, kThrottle.onset_s, 1e-3);
  EXPECT_NEAR(fit.slowdown, kThrottle.slowdown, 0.0025);
}

TEST(FitThrottle, StepsThatNeverSlowGiveNoSlowdownAndTooFewAreRefused) {
  EXPECT_DOUBLE_EQ(fit_throttle(std::vector<double>(20, 0.1)).slowdown, 1);
  EXPECT_THROW(fit_throttle(std::vector<double>(7, 0.1)), std::invalid_argument);
  EXPECT_THROW(fit_throttle({0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0}), std::invalid_argument);
}

// The throttle runs of the committed H200 calibrations (results/validation/h200/), fitted when they were
// made, refit to the onset and slowdown stored beside them.
TEST(FitThrottle, TheCommittedThrottleRunsRefitToTheirStoredNumbers) {
  for (const char* file : {"results/validation/h200/calibration-throttle.json",
                           "results/validation/h200/varied-tokens/calibration-throttle.json"}) {
    const nlohmann::json run = nlohmann::json::parse(std::ifstream(file))["measurements"]["throttle"];
    const PowerThrottle fit = fit_throttle(run["seconds"].get<std::vector<double>>());
    EXPECT_DOUBLE_EQ(fit.onset_s, run["onset_s"].get<double>()) << file;
    EXPECT_DOUBLE_EQ(fit.slowdown, run["slowdown"].get<double>()) << file;
  }
}

// The probe's steps timed from a cool GPU under kThrottle: the fit finds the boost-clock costs of kTruth
// again, and predicts the throttled times.
TEST(StepFit, WithAThrottleFitsTheBoostClockAndPredictsTheThrottledTimes) {
  const ModelOnH200 setup;
  const CostModel truth(setup.model, setup.hardware, setup.kv_bytes_per_token, kTruth);
  std::vector<StepSample> steps = synthetic_steps(setup, 0);
  int slowed = 0;
  for (StepSample& s : steps) {
    const double boost = s.seconds;
    s.seconds = GpuHeat(kThrottle).run(boost, truth.compute_bound(s.work()));
    slowed += s.seconds > boost;
  }
  ASSERT_GE(slowed, 4) << "the probe's long prefills run past the onset";
  const StepFit fit =
      fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, steps, std::nullopt, kThrottle);
  EXPECT_NEAR(fit.costs.linear_mfu / kTruth.linear_mfu, 1, 1e-6);
  EXPECT_NEAR(fit.costs.attention_mfu / kTruth.attention_mfu, 1, 1e-6);
  ASSERT_TRUE(fit.costs.throttle);
  EXPECT_EQ(fit.costs.throttle->slowdown, kThrottle.slowdown);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_NEAR(fit.predicted_seconds[i] / steps[i].seconds, 1, 1e-6) << steps[i].kind() << " " << i;
  const StepFit blind = fit_step_costs(setup.model, setup.hardware, setup.kv_bytes_per_token, steps);
  EXPECT_LT(blind.costs.linear_mfu, 0.99 * kTruth.linear_mfu)
      << "without it, the slowed steps pull the rate down";
}

// With a throttle run, the file carries the throttle (serving.power) and the run's samples, and its
// stored predictions are what the simulator charges each step from a cool GPU.
TEST(StepFit, TheCalibrationFileCarriesTheThrottleAndItsRun) {
  const ModelOnH200 setup;
  CalibrationRun run = synthetic_run(setup);
  GpuHeat heat(kThrottle);
  for (int i = 0; i < 30; ++i) run.throttle_seconds.push_back(heat.run(0.12, true));
  run.throttle_chunk_tokens = 4096;
  const Calibration back = parse_calibration(nlohmann::json(summarize_calibration(run)).dump(), "c.json");
  const StepCosts costs = *serving_step_costs(back, setup.model);
  ASSERT_TRUE(costs.throttle);
  EXPECT_NEAR(costs.throttle->onset_s, kThrottle.onset_s, 1e-3);
  EXPECT_EQ(back.measurements.at("throttle").at("seconds").size(), 30u);
  EXPECT_EQ(back.measurements.at("throttle").at("chunk_tokens"), 4096);
  const CostModel from_file(setup.model, setup.hardware, setup.kv_bytes_per_token, costs);
  const nlohmann::json& steps = back.measurements.at("steps");
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const StepWork work = run.steps[i].work();
    const double charged = GpuHeat(*costs.throttle)
                               .run(from_file.step_seconds(work), from_file.compute_bound(work),
                                    from_file.prefill_attention_seconds(work));
    EXPECT_EQ(steps[i]["predicted_seconds"].get<double>(), charged) << i;
  }
}

// Two runs slowed 1.15x at 4 % attention and 1.22x at 62 %: s + (a - s) 0.04 = 1.15 and
// s + (a - s) 0.62 = 1.22, so a - s = 0.07 / 0.58.
TEST(StepFit, SplitThrottleSolvesForBothFactors) {
  const PowerThrottle split =
      split_throttle({.onset_s = 0.11, .slowdown = 1.15}, 0.04, {.onset_s = 0.2, .slowdown = 1.22}, 0.62);
  EXPECT_EQ(split.onset_s, 0.11);
  EXPECT_NEAR(split.slowdown, 1.15 - 0.07 / 0.58 * 0.04, 1e-12);
  ASSERT_TRUE(split.attention_slowdown);
  EXPECT_NEAR(*split.attention_slowdown, 1.15 + 0.07 / 0.58 * 0.96, 1e-12);
  EXPECT_THROW(split_throttle({.slowdown = 1.1}, 0.5, {.slowdown = 1.2}, 0.5), std::invalid_argument);
}

// Steps of 0.3 s after an onset of 0.1 s, slowed 1.2x: the first takes 0.1 + 0.2 x 1.2 = 0.34 s, the rest
// 0.36 s, and (0.1 + 0.36 - 0.34) / 0.1 = 1.2.
TEST(StepFit, LongStepThrottleFromTheFirstStepAndTheRest) {
  std::vector<double> seconds(10, 0.36);
  seconds.front() = 0.34;
  EXPECT_NEAR(fit_long_step_throttle(seconds, 0.1).slowdown, 1.2, 1e-12);
  EXPECT_NEAR(fit_long_step_throttle(std::vector<double>(10, 0.3), 0.1).slowdown, 1, 1e-12) << "never slowed";
  EXPECT_THROW(fit_long_step_throttle(std::vector<double>(5, 0.3), 0.1), std::invalid_argument);
  EXPECT_THROW(fit_long_step_throttle(seconds, 0), std::invalid_argument);
}

// The chunk run and an attention run, timed on a GPU whose prefill attention slows 1.3x where the rest
// slows 1.15x, with an onset between the two steps' times: the file's throttle recovers both within 1 %
// (the chunk run's fit is to a 0.25 % grid, and the shares come from costs fitted to steps 1 % off).
void expect_attention_slowdown_recovered(const StepSample& attention_step) {
  const ModelOnH200 setup;
  const CostModel truth(setup.model, setup.hardware, setup.kv_bytes_per_token, kTruth);
  const StepSample chunk{.prefill_sequences = 1, .new_tokens = 4096};
  const double onset = 1.5 * truth.step_seconds(chunk.work());
  ASSERT_GT(truth.step_seconds(attention_step.work()), 1.2 * onset);
  const PowerThrottle truth_throttle{.onset_s = onset, .slowdown = 1.15, .attention_slowdown = 1.3};
  auto back_to_back = [&](const StepSample& step) {
    GpuHeat heat(truth_throttle);
    std::vector<double> seconds;
    for (int i = 0; i < 40; ++i) {
      seconds.push_back(
          heat.run(truth.step_seconds(step.work()), true, truth.prefill_attention_seconds(step.work())));
    }
    return seconds;
  };
  CalibrationRun run = synthetic_run(setup);
  run.throttle_chunk_tokens = 4096;
  run.throttle_seconds = back_to_back(chunk);
  run.attention_throttle_step = attention_step;
  run.attention_throttle_seconds = back_to_back(attention_step);
  const Calibration back = parse_calibration(nlohmann::json(summarize_calibration(run)).dump(), "c.json");
  const PowerThrottle fitted = *serving_step_costs(back, setup.model)->throttle;
  EXPECT_NEAR(fitted.onset_s, onset, 2e-3);
  EXPECT_NEAR(fitted.slowdown, 1.15, 0.01);
  ASSERT_TRUE(fitted.attention_slowdown);
  EXPECT_NEAR(*fitted.attention_slowdown, 1.3, 0.01);
  const nlohmann::json& attention = back.measurements.at("throttle_attention");
  EXPECT_EQ(attention.at("seconds").size(), 40u);
  EXPECT_EQ(attention.at("new_tokens"), attention_step.new_tokens);
  EXPECT_EQ(attention.at("cached_tokens"), attention_step.cached_tokens);
  EXPECT_EQ(attention.at("decode_sequences"), attention_step.decode_sequences);
  EXPECT_EQ(attention.at("decode_context"), attention_step.decode_context);
}

TEST(StepFit, TheAttentionThrottleRunGivesAttentionItsOwnSlowdown) {
  expect_attention_slowdown_recovered(kAttentionThrottleStep);
}

// A serving step's shape, decodes beside the chunk: their attention counts with the rest, as the cost
// model's prefill_attention_seconds leaves it.
TEST(StepFit, AnAttentionRunOfAServingStepsShapeGivesTheSameSlowdowns) {
  expect_attention_slowdown_recovered(parse_step_shape("8192:32768:40:16384"));
}

TEST(StepFit, StepShapesParseOrSayWhatWasExpected) {
  const StepSample chunk = parse_step_shape("4096:32768");
  EXPECT_EQ(chunk.prefill_sequences, 1);
  EXPECT_EQ(chunk.new_tokens, 4096);
  EXPECT_EQ(chunk.cached_tokens, 32768);
  EXPECT_EQ(chunk.decode_sequences, 0);
  const StepSample mixed = parse_step_shape("8192:0:40:16384");
  EXPECT_EQ(mixed.new_tokens, 8192);
  EXPECT_EQ(mixed.cached_tokens, 0);
  EXPECT_EQ(mixed.decode_sequences, 40);
  EXPECT_EQ(mixed.decode_context, 16384);
  for (const char* bad : {"", "4096", "4096:", ":4096", "4096:32K", "0:32768", "4096:-1", "4096:1:2",
                          "4096:1:2:3:4", "4096:32768:8:0", " 4096:1"}) {
    try {
      parse_step_shape(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("NEW:CACHED"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace kvtier::hw
