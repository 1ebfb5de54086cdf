#!/usr/bin/env python3
"""Holds kvtier's JSON Schemas (configs/schema/*.schema.json, which `kvtier schema --out configs/schema`
writes) against the YAML files they describe: every built-in file of each kind, the validation scenarios and
the coverage documents must validate, and files with a wrong type, a quantity without its unit, a value
outside a fixed set or an unknown key must not. CTest runs it from the source root as
kvtier_schema_validation_test.

YAML is read by YAML 1.2's core schema, as yaml-cpp (kvtier) and yaml-language-server read it: PyYAML's
YAML 1.1 would read `1e9` as text and `yes` as true.
"""
import copy
import glob
import json
import os
import re
import sys

try:
    import jsonschema
    import yaml
except ImportError as error:
    sys.exit(f"schema_files_test: {error}: install python3-jsonschema and python3-yaml "
             "(.ci/install-deps does)")

# The files of each kind, besides configs/schema/coverage/<kind>/*.yaml.
FILES = {
    "model": ["models/*.yaml"],
    "hardware": ["configs/hardware/*.yaml"],
    "scenario": ["configs/scenarios/*.yaml", "validate/scenarios/*.yaml"],
    "cost": ["configs/costs/*.yaml"],
    "workload": ["configs/workloads/*.yaml"],
    "tiers": ["configs/tiers/*.yaml"],
    "kv": [],  # no precision-map file is built in
}


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core schema scalars."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                           "tag:yaml.org,2002:null")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for tag, pattern, first in [
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
     r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+0123456789.")),
]:
    Yaml12Loader.add_implicit_resolver(tag, re.compile(pattern), first)


def construct_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 16) if text.startswith("0x") else int(text, 10)


def construct_float(loader, node):
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    return float("nan") if text == ".nan" else float(text)


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", construct_float)
Yaml12Loader.add_constructor("tag:yaml.org,2002:bool",
                             lambda loader, node: loader.construct_scalar(node).lower() == "true")


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Yaml12Loader)


def validator(kind):
    with open(f"configs/schema/{kind}.schema.json", encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def files_of(kind):
    paths = []
    for pattern in FILES[kind] + [f"configs/schema/coverage/{kind}/*.yaml"]:
        paths += sorted(glob.glob(pattern))
    return paths


def errors_of(check, document):
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
            for e in check.iter_errors(document)]


# Files each schema must reject: (kind, file it starts from, what to change, why it is wrong).
def set_key(*path_and_value):
    *path, value = path_and_value

    def change(document):
        node = document
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
    return change


def drop_key(*path):
    def change(document):
        node = document
        for step in path[:-1]:
            node = node[step]
        del node[path[-1]]
    return change


LLAMA, DEEPSEEK = "models/llama-3.1-8b.yaml", "models/deepseek-v3.yaml"
H200, SCENARIO = "configs/hardware/h200.yaml", "configs/scenarios/h200-llama8b.yaml"
AGENT, TIERS, LMCACHE = ("configs/workloads/agent-default.yaml", "configs/tiers/hbm-dram-nvme.yaml",
                         "configs/tiers/lmcache-example.yaml")
KV_MAP = "configs/schema/coverage/kv/int4-with-boundaries.yaml"
KV_PRESET = "configs/schema/coverage/kv/preset.yaml"
BAD = [
    ("model", LLAMA, set_key("layers", "many"), "a count given as text"),
    ("model", LLAMA, set_key("layres", 32), "an unknown key"),
    ("model", LLAMA, set_key("attention", "kind", "gqa2"), "a kind outside the set"),
    ("model", LLAMA, drop_key("total_params"), "a required key left out"),
    ("model", DEEPSEEK, set_key("attention", "kv_heads", 8), "a GQA key in an MLA attention"),
    ("hardware", H200, set_key("gpu", "hbm_capacity", 141), "a size without its unit"),
    ("hardware", H200, set_key("gpu", "hbm_bandwidth", "4.8TB"), "a size for a bandwidth"),
    ("hardware", H200, set_key("nvme", "gpudirect", "yes"), "YAML 1.1's yes for true"),
    ("scenario", SCENARIO, set_key("instance", "transfers", "sometimes"), "a value outside the set"),
    ("scenario", SCENARIO, set_key("workload", "sesions", 4), "a misspelt key"),
    ("scenario", SCENARIO, set_key("cache", "tiers", 1, "capacity", "96GiB/s"), "a bandwidth for a capacity"),
    ("scenario", SCENARIO, set_key("variants", 1, "set", "cache.tiers", [1]), "a list as a variant's value"),
    ("workload", AGENT, set_key("first_message_tokens", "dist", "gamma"), "an unknown distribution"),
    ("workload", AGENT, set_key("agents", 4.5), "a fraction for a count"),
    ("tiers", TIERS, set_key("tiers", 0, "policy", "lur"), "a misspelt policy"),
    ("tiers", TIERS, set_key("tiers", 1, "medium", "ssd"), "an unknown medium"),
    ("tiers", LMCACHE, set_key("chunk_sise", 256), "a misspelt LMCache key"),
    ("tiers", LMCACHE, set_key("gds_path", "/mnt/gds"), "an LMCache backend kvtier cannot model"),
    ("kv", KV_MAP, set_key("kv", "encoding", "scale_dtype", "fp64"), "a scale type outside the set"),
    ("kv", KV_PRESET, set_key("boundary_layers", 2), "a key beside kv"),
]


def main():
    failures = []
    written = sorted(os.path.basename(p)[: -len(".schema.json")]
                     for p in glob.glob("configs/schema/*.schema.json"))
    if written != sorted(FILES):
        failures.append(f"configs/schema holds {written}, this test knows {sorted(FILES)}: "
                        "add the new kind's files to FILES")
    checked = 0
    for kind in sorted(FILES):
        check = validator(kind)
        for path in files_of(kind):
            checked += 1
            for error in errors_of(check, load_yaml(path)):
                failures.append(f"{path}: {error}")
    for kind, path, change, why in BAD:
        document = copy.deepcopy(load_yaml(path))
        change(document)
        if validator(kind).is_valid(document):
            failures.append(f"{kind}.schema.json accepts {path} with {why}")
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print(f"{checked} files validate against their schemas; {len(BAD)} broken ones do not")
    return 0


if __name__ == "__main__":
    sys.exit(main())
