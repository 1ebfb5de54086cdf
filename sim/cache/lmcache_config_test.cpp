// An LMCache configuration read as a tier file: LMCache's backends as kvtier's tiers, with sizes, order and
// placement worked out by hand, and every key kvtier cannot model refused at its line and column.
#include "sim/cache/lmcache_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/core/config_error_test_support.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

using kvtier::testing::error_of;

// Llama-3.1-8B in bf16: 32 layers x 2 (K, V) x 8 heads x 128 x 2 B = 131,072 B per token, so a 256-token
// chunk is 33,554,432 B (32 MiB).
constexpr int64_t kChunkBytes = 33554432;
constexpr int64_t kGb = 1073741824;  // LMCache's GB

ModelCard llama8b() {
  return parse_model_card(load_config("llama-3.1-8b", "models"));
}

FileTiers parse(const std::string& yaml, int64_t block_tokens = 256) {
  return parse_lmcache_tiers(ConfigNode::load_string(yaml, "lm.yaml"), llama8b(), block_tokens);
}

std::string error_in(const std::string& yaml, int64_t block_tokens = 256) {
  return error_of([&] { parse(yaml, block_tokens); });
}

constexpr const char* kHbm = "extra_config: {kvtier_hbm: {capacity: 10GiB, kv: bf16}}\n";

// 10 GiB / 32 MiB = 320 blocks of HBM; 20 GB = 20 x 2^30 B = 640 chunks of DRAM; 100 GB = 3,200 of disk.
TEST(LmcacheTiers, CpuAndDiskBecomeInclusiveWriteThroughTiersBelowHbm) {
  const FileTiers file =
      parse(std::string("chunk_size: 256\nlocal_cpu: true\nmax_local_cpu_size: 20.0\n"
                        "local_disk: \"file:///local/disk/\"\nmax_local_disk_size: 100\n") +
            kHbm);
  ASSERT_EQ(file.tiers.size(), 3u);
  EXPECT_EQ(file.tiers[0].medium, Medium::kHbm);
  EXPECT_EQ(file.tiers[1].medium, Medium::kDram);
  EXPECT_EQ(file.tiers[2].medium, Medium::kNvme);
  EXPECT_EQ(file.tiers[0].capacity_bytes, 10 * kGb);
  EXPECT_EQ(file.tiers[1].capacity_bytes, 20 * kGb);
  EXPECT_EQ(file.tiers[2].capacity_bytes, 100 * kGb);
  for (const TierSpec& tier : file.tiers) {
    EXPECT_EQ(tier.block_tokens, 256);
    EXPECT_EQ(tier.bytes_per_block(), kChunkBytes) << tier.name;  // LMCache stores vLLM's KV unchanged
    EXPECT_EQ(tier.policy, PolicyKind::kLru) << tier.name;
  }
  EXPECT_EQ(file.tiers[0].capacity_blocks(), 320);
  EXPECT_EQ(file.tiers[1].capacity_blocks(), 640);
  EXPECT_EQ(file.tiers[2].capacity_blocks(), 3200);
  EXPECT_EQ(file.tiers[0].recency_order, RecencyOrder::kFirstBlockMostRecent);  // vLLM frees tail first
  for (size_t t = 1; t < 3; ++t) {
    EXPECT_EQ(file.tiers[t].placement, Placement::kInclusive);
    EXPECT_EQ(file.tiers[t].write, WriteMode::kThrough);
    EXPECT_TRUE(file.tiers[t].promote_on_hit);
    EXPECT_EQ(file.tiers[t].admit_after, 1);
    EXPECT_EQ(file.tiers[t].recency_order, RecencyOrder::kLastBlockMostRecent);  // chunks put in order
  }
  EXPECT_EQ(file.tiers[1].name, "dram");
  EXPECT_EQ(file.tiers[2].name, "nvme");
  EXPECT_EQ(file.medium_keys[1].path(), "local_cpu");
  EXPECT_EQ(file.medium_keys[2].path(), "local_disk");
  EXPECT_EQ(file.kv_keys[2].path(), "extra_config.kvtier_hbm.kv");
}

// LMCache's defaults: local_cpu true with 5 GB (5 x 2^30 B = 160 chunks), no disk.
TEST(LmcacheTiers, DefaultsAreLmcachesOwn) {
  const FileTiers file = parse(kHbm);
  ASSERT_EQ(file.tiers.size(), 2u);
  EXPECT_EQ(file.tiers[1].medium, Medium::kDram);
  EXPECT_EQ(file.tiers[1].capacity_bytes, 5 * kGb);
  EXPECT_EQ(file.tiers[1].capacity_blocks(), 160);
  EXPECT_EQ(lmcache_chunk_tokens(ConfigNode::load_string(kHbm, "lm.yaml")), 256);
}

// A fraction of a GB is truncated to bytes as LMCache does: 0.3 x 2^30 = 322,122,547.2 -> 322,122,547 B,
// 9 whole chunks. A disk without a size, and local_cpu: False (Python's spelling), leave those tiers out.
TEST(LmcacheTiers, FractionsAndAbsentBackends) {
  FileTiers file = parse(std::string("max_local_cpu_size: 0.3\nlocal_disk: /mnt/kv\n") + kHbm);
  ASSERT_EQ(file.tiers.size(), 2u);
  EXPECT_EQ(file.tiers[1].capacity_bytes, 322122547);
  EXPECT_EQ(file.tiers[1].capacity_blocks(), 9);

  file = parse(std::string("local_cpu: False\nlocal_disk: /mnt/kv\nmax_local_disk_size: 1\n") + kHbm);
  ASSERT_EQ(file.tiers.size(), 2u);
  EXPECT_EQ(file.tiers[1].medium, Medium::kNvme);
  EXPECT_EQ(file.tiers[1].capacity_bytes, kGb);
  EXPECT_EQ(file.tiers[1].capacity_blocks(), 32);

  file = parse(std::string("local_cpu: false\n") + kHbm);
  EXPECT_EQ(file.tiers.size(), 1u);
}

// chunk_size 512: 64 MiB blocks; cache_policy is case-insensitive, as in LMCache.
TEST(LmcacheTiers, ChunkSizeAndPolicy) {
  const FileTiers file = parse(std::string("chunk_size: 512\ncache_policy: lfu\n") + kHbm, 512);
  EXPECT_EQ(file.tiers[0].bytes_per_block(), 2 * kChunkBytes);
  EXPECT_EQ(file.tiers[0].capacity_blocks(), 160);
  EXPECT_EQ(file.tiers[0].policy, PolicyKind::kLru);  // vLLM's GPU cache, kvtier_hbm's default
  EXPECT_EQ(file.tiers[1].policy, PolicyKind::kLfu);
  EXPECT_EQ(file.tiers[1].capacity_blocks(), 80);  // 5 GiB / 64 MiB
}

// A remote store below the disk, sized by extra_config.kvtier_remote: 1 TiB / 32 MiB = 32,768 chunks.
TEST(LmcacheTiers, RemoteStoreIsTheLastTier) {
  const FileTiers file = parse(
      "local_disk: file:///d/\nmax_local_disk_size: 2\nremote_url: lm://cache:65432\nremote_serde: naive\n"
      "extra_config:\n  kvtier_hbm: {capacity_blocks: 100, kv: bf16}\n"
      "  kvtier_remote: {capacity: 1TiB, policy: s3fifo}\n");
  ASSERT_EQ(file.tiers.size(), 4u);
  EXPECT_EQ(file.tiers[0].capacity_blocks(), 100);
  EXPECT_EQ(file.tiers[3].medium, Medium::kRemote);
  EXPECT_EQ(file.tiers[3].capacity_bytes, 1099511627776);
  EXPECT_EQ(file.tiers[3].capacity_blocks(), 32768);
  EXPECT_EQ(file.tiers[3].policy, PolicyKind::kS3Fifo);
  EXPECT_EQ(file.tiers[3].write, WriteMode::kThrough);
  EXPECT_EQ(file.medium_keys[3].where(), "lm.yaml:3:13: remote_url");
}

// Keys that change nothing kvtier models are accepted whatever their value.
TEST(LmcacheTiers, IgnoresTimingAndManagementKeys) {
  const FileTiers file =
      parse(std::string("use_layerwise: true\nenable_async_loading: True\nlmcache_instance_id: a\n"
                        "internal_api_server_port_start: 7000\npre_caching_hash_algorithm: sha256_cbor\n"
                        "blend_recompute_ratio: 0.15\nsave_unfull_chunk: false\nenable_blending: False\n") +
            kHbm);
  EXPECT_EQ(file.tiers.size(), 2u);
}

TEST(LmcacheTiers, RefusesWhatKvtierCannotModelAtTheKey) {
  EXPECT_EQ(
      error_in(std::string("enable_blending: true\n") + kHbm),
      "lm.yaml:1:18: enable_blending: kvtier cannot model this: CacheBlend reuses the KV of chunks that "
      "are not a prefix, recomputing a share of it; kvtier's cache reuses prefixes only");
  EXPECT_EQ(error_in(std::string("chunk_size: 256\nsave_decode_cache: True\n") + kHbm),
            "lm.yaml:2:20: save_decode_cache: kvtier cannot model this: kvtier's cache holds the blocks of "
            "requests' prompts: a request's decode KV is freed when it ends");
  EXPECT_EQ(error_in(std::string("enable_p2p: yes\n") + kHbm),
            "lm.yaml:1:13: enable_p2p: kvtier cannot model this: chunks come from other instances' caches; "
            "kvtier models one instance's tiers");
  EXPECT_EQ(error_in(std::string("enable_pd: true\n") + kHbm).substr(0, 54),
            "lm.yaml:1:12: enable_pd: kvtier cannot model this: dis");
  EXPECT_EQ(
      error_in(std::string("gds_path: /mnt/gds\n") + kHbm),
      "lm.yaml:1:11: gds_path: kvtier cannot model this: a GPUDirect storage backend beside local_disk, "
      "with no size in the file; kvtier has one nvme tier, local_disk's");
  EXPECT_EQ(error_in(std::string("cache_policy: FIFO\n") + kHbm),
            "lm.yaml:1:15: cache_policy: 'FIFO': kvtier models LMCache's LRU and LFU (as its lru and lfu), "
            "not LMCache's other policies (FIFO, MRU, COST_AWARE)");
  EXPECT_EQ(error_in(std::string("remote_url: lm://h:1\nremote_serde: cachegen\n"
                                 "extra_config: {kvtier_hbm: {capacity: 1GiB, kv: bf16}, "
                                 "kvtier_remote: {capacity: 1TiB}}\n")),
            "lm.yaml:2:15: remote_serde: kvtier cannot model this: CacheGen stores the remote copy as a "
            "compressed bitstream, which is no KV layout kvtier has; naive stores vLLM's KV bytes unchanged");
  EXPECT_EQ(error_in(std::string("local_device: cpu\n") + kHbm),
            "lm.yaml:1:15: local_device: an LMCache v0 key, which LMCache v1 ignores; kvtier reads v1's "
            "configuration (v0's local_device: cpu with max_local_cache_size is v1's local_cpu: true with "
            "max_local_cpu_size)");
}

TEST(LmcacheTiers, RefusesUnknownKeysWithTheClosestOne) {
  EXPECT_EQ(error_in(std::string("chunk_sise: 256\n") + kHbm),
            "lm.yaml:1:13: chunk_sise: not an LMCache key kvtier reads (did you mean 'chunk_size'?); "
            "docs/config-reference.md lists what an LMCache file may hold");
  EXPECT_EQ(
      error_in("extra_config:\n  kvtier_hbm: {capacity: 1GiB, kv: bf16}\n  save_only_first_rank: true\n"),
      "lm.yaml:3:25: extra_config.save_only_first_rank: an LMCache extra setting kvtier does not model; "
      "extra_config holds kvtier's kvtier_hbm and kvtier_remote");
}

TEST(LmcacheTiers, NamesWhatIsMissingOrInconsistent) {
  EXPECT_EQ(
      error_in("chunk_size: 256\n"),
      "lm.yaml:1:1: missing extra_config.kvtier_hbm: vLLM's GPU prefix cache, which an LMCache file does "
      "not describe, is kvtier's tier 0; add extra_config: {kvtier_hbm: {capacity: 40GiB, kv: bf16}} "
      "(LMCache ignores extra_config entries it does not know)");
  EXPECT_EQ(
      error_in(std::string("chunk_size: 256\n") + kHbm, 512),
      "lm.yaml:1:13: chunk_size: LMCache stores chunks of 256 tokens, and kvtier has one block size for "
      "every tier, but the blocks here are 512 tokens; leave --block-tokens out (the chunk size is then "
      "the block size) or give --block-tokens 256");
  EXPECT_EQ(error_in(std::string("remote_url: redis://h:6379\n") + kHbm),
            "lm.yaml:1:13: remote_url: LMCache's file does not size the remote store; give its size as "
            "extra_config: {kvtier_remote: {capacity: 1TiB}}");
  EXPECT_EQ(error_in(std::string("remote_url: localhost\n") + kHbm),
            "lm.yaml:1:13: remote_url: expected a URL such as lm://host:65432 or redis://host:6379, got "
            "'localhost'");
  EXPECT_EQ(
      error_in("extra_config: {kvtier_hbm: {medium: hbm, capacity: 1GiB, kv: bf16}}\n"),
      "lm.yaml:1:37: extra_config.kvtier_hbm.medium: this is the HBM tier (tier 0); it takes no medium");
  EXPECT_EQ(error_in(std::string("max_local_cpu_size: -1\n") + kHbm),
            "lm.yaml:1:21: max_local_cpu_size: expected a size in GB (LMCache's GB: 2^30 bytes), at least 0");
  EXPECT_EQ(error_in(std::string("max_local_cpu_size: 0\n") + kHbm),
            "lm.yaml:1:21: max_local_cpu_size: local_cpu: true needs a positive max_local_cpu_size (GB): the "
            "CPU buffer every store goes through");
  EXPECT_EQ(error_in(std::string("local_cpu: maybe\n") + kHbm),
            "lm.yaml:1:12: local_cpu: expected true or false, got 'maybe'");
  EXPECT_EQ(
      error_in("extra_config: {kvtier_hbm: {capacity: 1GiB, kv: bf16}, kvtier_remote: {capacity: 1TiB}}\n"),
      "lm.yaml:1:71: extra_config.kvtier_remote: sizes the remote store of remote_url, which this file "
      "does not give");
  // The HBM tier's own keys are a kvtier tier's, with its errors.
  EXPECT_EQ(error_in("extra_config: {kvtier_hbm: {capacity: 1GiB}}\n"),
            "lm.yaml:1:28: extra_config.kvtier_hbm: missing required key 'kv'");
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

// A tier file is LMCache's when it has LMCache's keys and no `tiers`; kvtier's files read as before.
TEST(LoadTierFile, TellsLmcacheFilesFromKvtiersOwn) {
  const TierFile example = load_tier_file("lmcache-example");
  EXPECT_TRUE(example.lmcache);
  EXPECT_EQ(example.block_tokens, 256);
  const FileTiers tiers = parse_tier_file(example, llama8b(), 256);
  ASSERT_EQ(tiers.tiers.size(), 3u);
  EXPECT_EQ(tiers.tiers[1].capacity_bytes, 20 * kGb);
  EXPECT_EQ(tiers.tiers[2].capacity_bytes, 100 * kGb);

  const TierFile own = load_tier_file("replay-small");
  EXPECT_FALSE(own.lmcache);
  EXPECT_FALSE(own.block_tokens.has_value());
  const FileTiers small = parse_tier_file(own, llama8b(), 16);
  ASSERT_EQ(small.tiers.size(), 3u);
  EXPECT_EQ(small.medium_keys[2].path(), "tiers[2].medium");
  EXPECT_EQ(small.kv_keys[1].path(), "tiers[1].kv");
  EXPECT_EQ(small.hierarchy.path(), "tiers");

  const std::string neither = write_file("kvtier-neither-tiers.yaml", "tier:\n  - {medium: hbm}\n");
  EXPECT_EQ(error_of([&] { load_tier_file(neither); }),
            neither + ":1:1: tier: unknown key 'tier' (did you mean 'tiers'?)");
  const std::string both = write_file("kvtier-both-tiers.yaml", "tiers: []\nchunk_size: 256\n");
  EXPECT_EQ(error_of([&] { load_tier_file(both); }), both + ":2:1: chunk_size: unknown key 'chunk_size'");
}

}  // namespace
}  // namespace kvtier
