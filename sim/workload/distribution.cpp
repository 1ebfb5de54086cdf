#include "sim/workload/distribution.h"

#include <algorithm>
#include <cmath>

namespace kvtier {

Distribution Distribution::parse(const ConfigNode& node) {
  node.schema_definition("distribution");
  if (node.is_scalar()) return constant(node.as_number());
  if (!node.is_map())
    node.fail("expected a number or a mapping such as {dist: lognormal, median: 1500, sigma: 1}");
  std::string kind = node.choice("dist", {"constant", "uniform", "exponential", "lognormal", "normal"});
  Distribution d = constant(0);
  if (kind == "constant") {
    node.allow_keys({"dist", "value", "min", "max"});
    d = constant(node.number("value"));
  } else if (kind == "uniform") {
    node.allow_keys({"dist", "low", "high", "min", "max"});
    d = Distribution(Kind::kUniform, node.number("low"), node.number("high"));
    if (d.second_ < d.first_) node.child("high").fail("expected high >= low");
  } else if (kind == "exponential") {
    node.allow_keys({"dist", "mean", "min", "max"});
    d = Distribution(Kind::kExponential, node.number("mean"), 0);
    if (!(d.first_ > 0)) node.child("mean").fail("expected a positive mean");
  } else if (kind == "lognormal") {
    node.allow_keys({"dist", "median", "sigma", "min", "max"});
    double median = node.number("median");
    if (!(median > 0)) node.child("median").fail("expected a positive median");
    d = Distribution(Kind::kLognormal, std::log(median), node.number("sigma"));
    if (d.second_ < 0) node.child("sigma").fail("expected sigma >= 0");
  } else {  // normal
    node.allow_keys({"dist", "mean", "stddev", "min", "max"});
    d = Distribution(Kind::kNormal, node.number("mean"), node.number("stddev"));
    if (d.second_ < 0) node.child("stddev").fail("expected stddev >= 0");
  }
  d.min_ = node.number("min", d.min_);
  d.max_ = node.number("max", d.max_);
  if (d.min_ > d.max_) node.child("max").fail("expected max >= min");
  return d;
}

double Distribution::sample(std::mt19937_64& rng) const {
  double x = first_;
  switch (kind_) {
    case Kind::kConstant:
      break;
    case Kind::kUniform:
      x = std::uniform_real_distribution<double>(first_, second_)(rng);
      break;
    case Kind::kExponential:
      x = std::exponential_distribution<double>(1.0 / first_)(rng);
      break;
    case Kind::kLognormal:
      x = std::lognormal_distribution<double>(first_, second_)(rng);
      break;
    case Kind::kNormal:
      x = std::normal_distribution<double>(first_, second_)(rng);
      break;
  }
  return std::clamp(x, min_, max_);
}

double Distribution::lowest() const {
  double low = -std::numeric_limits<double>::infinity();
  if (kind_ == Kind::kConstant || kind_ == Kind::kUniform) low = first_;
  if (kind_ == Kind::kExponential || kind_ == Kind::kLognormal) low = 0;
  return std::clamp(low, min_, max_);
}

double Distribution::highest() const {
  double high = std::numeric_limits<double>::infinity();
  if (kind_ == Kind::kConstant) high = first_;
  if (kind_ == Kind::kUniform) high = second_;
  return std::clamp(high, min_, max_);
}

int64_t Distribution::sample_count(std::mt19937_64& rng, int64_t floor) const {
  return std::max<int64_t>(floor, std::llround(sample(rng)));
}

}  // namespace kvtier
