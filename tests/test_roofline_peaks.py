"""The device's roofs (analysis/roofline/peaks.py): the built-in figures checked against the datasheets' own
arithmetic (units x clock x rate per unit), the entry chosen for the devices of real traces, the choice among
entries that share a name, user files that add or replace entries, and user files that must be refused."""
from __future__ import annotations

import ast
import gzip
import json
import math
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES, SHARED_TRACES, requires_shared
from kinetoscope.analysis.roofline import peaks as peaks_module
from kinetoscope.analysis.roofline.peaks import ADVICE, DTYPES, Peaks, PeaksError, builtin_peaks, choose, parse_peaks

PEAKS_JSON = REPO / "tb_plugin" / "kinetoscope" / "analysis" / "roofline" / "peaks.json"


def by_name(name: str) -> Peaks:
    return next(e.peaks for e in builtin_peaks() if e.peaks.device == name)


def props(name, sms=None, **more):
    return [{"id": 0, "name": name, **({} if sms is None else {"numSms": sms}), **more}]


def device_properties(path: Path) -> list:
    """The `deviceProperties` of a trace file (Kineto writes it near the end)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    at = text.rindex('"deviceProperties"')
    return json.JSONDecoder().raw_decode(text, text.index("[", at))[0]


def user_file(*devices) -> str:
    return json.dumps({"devices": list(devices)})


def device(name="My GPU", **fields):
    return {"name": name, "tflops": {"bf16": 100, "fp32": 10}, "tbps": 1.0, **fields}


# --- the built-in figures ---------------------------------------------------------------------------------------

def test_every_builtin_entry_cites_its_datasheet_and_holds_positive_figures():
    entries = builtin_peaks()
    assert len(entries) == len(json.loads(PEAKS_JSON.read_text())["devices"]) >= 25
    for entry in entries:
        p = entry.peaks
        assert "https://" in p.source and p.source.split("https://")[0].strip(", "), p.device
        assert p.clock and p.clock != "not stated", p.device
        assert entry.sms and entry.patterns and not entry.user
        assert p.flops and set(p.flops) <= set(DTYPES) and "fp32" in p.flops, p.device
        assert all(math.isfinite(v) and v > 0 for v in p.flops.values())
        assert 1e11 <= p.bandwidth <= 2e13, p.device  # 0.1 to 20 TB/s: TB/s were converted once
        assert p.flops.get("fp64", math.inf) >= p.flops.get("fp64_vector", 0)
    assert len({e.peaks.device for e in entries}) == len(entries)


def test_the_builtin_file_is_a_user_file_of_the_documented_format():
    """One format for both: the built-in file read as a user's gives the same figures."""
    as_user = parse_peaks(PEAKS_JSON.read_text(), "copy.json")
    assert [(e.peaks.device, e.peaks.flops, e.peaks.bandwidth, e.sms) for e in as_user] == \
        [(e.peaks.device, e.peaks.flops, e.peaks.bandwidth, e.sms) for e in builtin_peaks()]
    assert all(e.user and e.peaks.source.startswith("user file copy.json: ") for e in as_user)


def test_the_docstring_example_is_a_valid_file():
    example = peaks_module.__doc__.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    (entry,) = parse_peaks(textwrap.dedent(example), "example.json")
    assert entry.sms == 132 and entry.peaks.flops["bf16"] == 700e12 and entry.peaks.bandwidth == 3.0e12


# Each figure is (units) x (clock) x (operations per unit per clock), the vendors' own arithmetic: tensor cores
# do 2 x (multiply-adds per clock) operations. Volta: 8 tensor cores x 64 FMA per SM; Ampere A100: 4 x 256;
# consumer Ampere/Ada at FP32 accumulate: 4 x 64; CUDA cores: 64 (Volta, A100) or 128 FP32 lanes per SM, 2 each.
# CDNA 2 CU: 1024 fp16, 256 fp64/fp32 matrix and 128 vector per clock; CDNA 3: 2048 fp16, 256 fp32 vector; CDNA 4:
# 4096 fp16, 256 fp32.
@pytest.mark.parametrize("name, dtype, per_unit_per_clock", [
    ("NVIDIA V100 SXM2 (16 GB, 32 GB)", "fp16", 8 * 64 * 2), ("NVIDIA V100 SXM2 (16 GB, 32 GB)", "fp32", 64 * 2),
    ("NVIDIA V100 PCIe (16 GB, 32 GB)", "fp16", 8 * 64 * 2),
    ("NVIDIA A100 SXM4 80GB", "bf16", 4 * 256 * 2), ("NVIDIA A100 SXM4 80GB", "fp32", 64 * 2),
    ("NVIDIA A100 SXM4 80GB", "tf32", 4 * 128 * 2),
    ("NVIDIA GeForce RTX 3090", "fp16", 4 * 64 * 2), ("NVIDIA GeForce RTX 3090", "fp32", 128 * 2),
    ("NVIDIA GeForce RTX 4090", "bf16", 4 * 64 * 2), ("NVIDIA GeForce RTX 4090", "fp32", 128 * 2),
    ("AMD Instinct MI210", "fp16", 1024), ("AMD Instinct MI210", "fp64", 256), ("AMD Instinct MI210", "fp32", 128),
    ("AMD Instinct MI250X (one GCD)", "bf16", 1024), ("AMD Instinct MI250X (one GCD)", "fp64_vector", 128),
    ("AMD Instinct MI250 (one GCD)", "fp16", 1024),
    ("AMD Instinct MI300X", "bf16", 2048), ("AMD Instinct MI300X", "fp32", 256), ("AMD Instinct MI300X", "fp8", 4096),
    ("AMD Instinct MI325X", "fp16", 2048),
    ("AMD Instinct MI355X", "bf16", 4096), ("AMD Instinct MI355X", "fp32", 256),
])
def test_figures_are_units_times_clock_times_rate(name, dtype, per_unit_per_clock):
    entry = next(e for e in builtin_peaks() if e.peaks.device == name)
    assert entry.peaks.flops[dtype] == pytest.approx(entry.sms * entry.clock_mhz * 1e6 * per_unit_per_clock, rel=0.01)


@pytest.mark.parametrize("name, dtype, datasheet_tflops, halved", [
    # NVIDIA's asterisked (sparse) figures, halved: H100 SXM 1,979 bf16*, PCIe 1,513*, NVL 1,671*; B200 4.5 PF*
    ("NVIDIA H100 SXM5 80GB", "bf16", 1979, 2), ("NVIDIA H100 SXM5 80GB", "fp8", 3958, 2),
    ("NVIDIA H100 SXM5 80GB", "tf32", 989, 2), ("NVIDIA H100 PCIe", "bf16", 1513, 2), ("NVIDIA H100 NVL", "fp16", 1671, 2),
    ("NVIDIA H200 SXM 141GB", "bf16", 1979, 2), ("NVIDIA B200 (HGX B200)", "bf16", 4500, 2),
    ("NVIDIA GB200 (one GPU of GB200 NVL72)", "fp8", 10000, 2), ("NVIDIA L4", "fp8", 485, 2),
    ("NVIDIA L40S", "bf16", 733, 2), ("NVIDIA A10", "tf32", 125, 2),
    # the MI200 data sheet's two-GCD module figures, per GCD
    ("AMD Instinct MI250X (one GCD)", "fp16", 383, 2), ("AMD Instinct MI250 (one GCD)", "fp64", 90.5, 2),
    # figures printed dense
    ("NVIDIA H100 SXM5 80GB", "fp64", 67, 1), ("NVIDIA A100 SXM4 40GB", "bf16", 312, 1), ("NVIDIA T4", "fp16", 65, 1),
    ("AMD Instinct MI300X", "bf16", 1307.4, 1),
])
def test_figures_are_the_dense_halves_of_the_datasheets(name, dtype, datasheet_tflops, halved):
    assert by_name(name).flops[dtype] == pytest.approx(datasheet_tflops * 1e12 / halved, rel=1e-3)


def test_absent_units_are_absent():
    assert "fp8" not in by_name("NVIDIA A100 SXM4 80GB").flops
    assert not {"bf16", "tf32", "fp8", "int8"} & set(by_name("NVIDIA V100 SXM2 (16 GB, 32 GB)").flops)
    assert not {"bf16", "tf32", "fp8"} & set(by_name("NVIDIA T4").flops)
    assert "tf32" not in by_name("AMD Instinct MI250X (one GCD)").flops


def test_ridge_points():
    """bf16 on the H100 SXM: 1,979/2 TFLOP/s over 3.35 TB/s is 295 FLOP per byte; every device's bf16 ridge (or
    fp16's) lies between the T4's and the B200's sort of figures, and every fp32 vector one far below."""
    assert by_name("NVIDIA H100 SXM5 80GB").ridge("bf16") == pytest.approx(1979 / 2 / 3.35, rel=1e-3)
    assert by_name("NVIDIA H200 SXM 141GB").ridge("bf16") == pytest.approx(1979 / 2 / 4.8, rel=1e-3)
    assert by_name("AMD Instinct MI300X").ridge("fp16") == pytest.approx(1307.4 / 5.3, rel=1e-3)
    for entry in builtin_peaks():
        p = entry.peaks
        assert 50 < (p.ridge("bf16") if "bf16" in p.flops else p.ridge("fp16")) < 700, p.device
        assert 1 < p.ridge("fp32", matrix=False) < 110, p.device


# --- which rate a kind of work gets -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, dtype, matrix, tflops", [
    ("NVIDIA H100 SXM5 80GB", "bf16", True, 989.5), ("NVIDIA H100 SXM5 80GB", "fp16", True, 989.5),
    ("NVIDIA H100 SXM5 80GB", "tf32", True, 494.5), ("NVIDIA H100 SXM5 80GB", "fp32", True, 67),
    ("NVIDIA H100 SXM5 80GB", "fp8", True, 1979), ("NVIDIA H100 SXM5 80GB", "int8", True, 1979),
    ("NVIDIA H100 SXM5 80GB", "fp64", True, 67), ("NVIDIA H100 SXM5 80GB", "fp64", False, 34),
    ("NVIDIA H100 SXM5 80GB", "bf16", False, 67), ("NVIDIA H100 SXM5 80GB", "int8", False, 67),
    # no unit for the dtype: tf32/bf16/fp16 become fp32 arithmetic, fp8/int8 have no rate
    ("NVIDIA V100 SXM2 (16 GB, 32 GB)", "bf16", True, 15.7), ("NVIDIA V100 SXM2 (16 GB, 32 GB)", "tf32", True, 15.7),
    ("NVIDIA V100 SXM2 (16 GB, 32 GB)", "fp8", True, None), ("NVIDIA A100 SXM4 80GB", "fp8", True, None),
    ("NVIDIA V100 SXM2 (16 GB, 32 GB)", "fp64", False, 7.8),
    # CDNA 2 runs fp32 GEMMs on its matrix cores, at twice the vector rate
    ("AMD Instinct MI250X (one GCD)", "fp32", True, 47.85), ("AMD Instinct MI250X (one GCD)", "tf32", True, 47.85),
    ("AMD Instinct MI250X (one GCD)", "fp32", False, 23.95), ("AMD Instinct MI250X (one GCD)", "fp64", False, 23.95),
    ("NVIDIA L4", "fp64", True, None), ("NVIDIA L4", "fp64", False, None),
    ("NVIDIA H100 SXM5 80GB", None, True, None), ("NVIDIA H100 SXM5 80GB", "fp4", True, None),
    ("NVIDIA H100 SXM5 80GB", "c10::BFloat16", True, None),
])
def test_compute_peak(name, dtype, matrix, tflops):
    peak = by_name(name).compute_peak(dtype, matrix)
    assert (peak is None) if tflops is None else peak == pytest.approx(tflops * 1e12)


# --- choosing the entry for a trace ----------------------------------------------------------------------------

REAL = [
    ("modern/h100/gaunernst_bert-small-uncased__1016001.json.gz", 0, "NVIDIA H100 SXM5 80GB"),
    ("modern/h100/Falconsai_nsfw_image_detection__1016002.json.gz", 0, "NVIDIA H100 SXM5 80GB"),
    ("modern/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz", 0, "AMD Instinct MI300X"),
    ("modern/b200/eager_trace.json.gz", 0, "NVIDIA B200 (HGX B200)"),
    ("resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", 1, "NVIDIA V100 SXM2 (16 GB, 32 GB)"),
    ("hta/trace_diff/test/test.json.gz", 0, "NVIDIA V100 SXM2 (16 GB, 32 GB)"),
    ("hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", 0, "NVIDIA A100 SXM4 40GB"),
    ("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 0, "AMD Instinct MI250 (one GCD)"),
]


@requires_shared
@pytest.mark.parametrize("path, device_id, expected", REAL)
def test_real_traces_choose_their_device(path, device_id, expected):
    choice = choose(device_properties(SHARED_TRACES / path), device_id=device_id)
    assert choice.peaks is not None and choice.peaks.device == expected, choice.reason
    assert expected in choice.reason and "built-in" in choice.reason


@pytest.mark.parametrize("folder, expected", [("cuda_h200", "NVIDIA H200 SXM 141GB"), ("cuda_h100", "NVIDIA H100 SXM5 80GB")])
def test_the_cuda_samples_choose_their_device(folder, expected):
    traces = sorted((SAMPLES / "logs" / folder).rglob("*.pt.trace.json.gz"))[:2]
    assert traces
    for trace in traces:
        assert choose(device_properties(trace)).peaks.device == expected


@requires_shared
def test_a_device_the_trace_leaves_unnamed_gets_no_figures():
    trace = next((SHARED_TRACES / "modern" / "inference" / "vllm_decode_full").rglob("*.json.gz"))
    choice = choose(device_properties(trace))
    assert choice.peaks is None and "unnamed" in choice.reason and "304 SMs" in choice.reason and ADVICE in choice.reason


def test_the_name_is_read_without_case_or_spacing():
    assert choose(props("  nvidia h100 80gb  HBM3 ", 132)).peaks.device == "NVIDIA H100 SXM5 80GB"
    assert choose(props("NVIDIA H100 80GB HBM3")).peaks.device == "NVIDIA H100 SXM5 80GB"  # no SM count: name only


@pytest.mark.parametrize("sms, expected", [(110, "AMD Instinct MI250X (one GCD)"), (104, "AMD Instinct MI250 (one GCD)")])
def test_a_shared_name_is_told_apart_by_sm_count(sms, expected):
    assert choose(props("AMD Instinct MI250X / MI250", sms)).peaks.device == expected


def test_a_pcie_and_an_sxm_part_of_one_name_are_told_apart_by_sm_count():
    pair = parse_peaks(user_file(device("SXM part", match=["NVIDIA H100*"], sms=132, tbps=3.35),
                                 device("PCIe part", match=["NVIDIA H100*"], sms=114, tbps=2.0)), "pair.json")
    assert choose(props("NVIDIA H100", 114), pair).peaks.device == "PCIe part"
    assert choose(props("NVIDIA H100", 132), pair).peaks.device == "SXM part"
    assert choose(props("NVIDIA H100", 66), pair).peaks is None


def test_a_partitioned_device_is_not_the_whole_one():
    choice = choose(props("AMD Instinct MI300X", 38))
    assert choice.peaks is None
    assert "38 SMs" in choice.reason and "304 SMs (AMD Instinct MI300X)" in choice.reason and ADVICE in choice.reason


def test_an_unknown_device_says_how_to_add_it():
    choice = choose(props("NVIDIA Quantum Q1", 999))
    assert choice == peaks_module.Choice(None, f"no peak figures for device 'NVIDIA Quantum Q1' (999 SMs): {ADVICE}")


def test_the_device_is_picked_by_id():
    two = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}, {"id": 1, "name": "NVIDIA B200", "numSms": 148}]
    assert choose(two).peaks.device == "NVIDIA H100 SXM5 80GB"
    assert choose(two, device_id=1).peaks.device == "NVIDIA B200 (HGX B200)"
    missing = choose(two, device_id=5)
    assert missing.peaks is None and "no device 5" in missing.reason
    unnumbered = [{"name": "NVIDIA L4", "numSms": 58}, {"name": "NVIDIA A10", "numSms": 72}]
    assert choose(unnumbered, device_id=1).peaks.device == "NVIDIA A10"


@pytest.mark.parametrize("hostile", [None, {}, "NVIDIA H100", [], [1, "a", None, []], 42])
def test_no_device_properties(hostile):
    choice = choose(hostile)
    assert choice.peaks is None and "deviceProperties" in choice.reason


@pytest.mark.parametrize("entry, chosen", [
    ({"name": 7, "numSms": 132}, None),
    ({"name": "NVIDIA H100 80GB HBM3", "numSms": "132"}, "NVIDIA H100 SXM5 80GB"),  # a count that is no number: unknown
    ({"name": "NVIDIA H100 80GB HBM3", "numSms": True}, "NVIDIA H100 SXM5 80GB"),
    ({"name": "NVIDIA H100 80GB HBM3", "numSms": 10 ** 30}, "NVIDIA H100 SXM5 80GB"),
    ({"name": "NVIDIA H100 80GB HBM3" + " " * 300, "numSms": 132}, None),  # over the length any real name has
    ({"name": "A" * 100_000}, None),
    ({"name": None, "numSms": None, "clockRate": "fast"}, None),
])
def test_hostile_device_entries(entry, chosen):
    choice = choose([entry])
    assert (choice.peaks.device if choice.peaks else None) == chosen
    assert len(choice.reason) < 400


# --- user files ----------------------------------------------------------------------------------------------

def test_a_user_entry_of_a_builtin_name_replaces_it():
    text = user_file(device("NVIDIA H100 SXM5 80GB", match=["NVIDIA H100 80GB HBM3"], tflops={"bf16": 700}, tbps=3,
                            source="our benchmarks"))
    entries = parse_peaks(text, "/etc/peaks.json") + builtin_peaks()
    choice = choose(props("NVIDIA H100 80GB HBM3", 132), entries)
    assert choice.peaks.flops == {"bf16": 700e12} and choice.peaks.bandwidth == 3e12
    assert choice.peaks.source == "user file /etc/peaks.json: our benchmarks"
    assert "user file /etc/peaks.json" in choice.reason
    assert len([e for e in entries if e.peaks.device == "NVIDIA H100 SXM5 80GB"]) == 2  # replaced when choosing
    assert choose(props("NVIDIA B200", 148), entries).peaks.device == "NVIDIA B200 (HGX B200)"  # the rest stay


def test_user_entries_come_before_builtin_ones():
    mine = parse_peaks(user_file(device("capped H100", match=["NVIDIA H100*"])), "mine.json")
    assert choose(props("NVIDIA H100 80GB HBM3", 132), mine + builtin_peaks()).peaks.device == "capped H100"
    assert choose(props("NVIDIA H100 80GB HBM3", 132), builtin_peaks() + mine).peaks.device == "capped H100"


def test_an_exact_name_beats_a_glob_and_the_clock_breaks_a_tie():
    entries = parse_peaks(user_file(device("any", match=["NVIDIA X*"]), device("exact", match=["NVIDIA X1"])), "a.json")
    assert choose(props("NVIDIA X1"), entries).peaks.device == "exact"
    clocked = parse_peaks(user_file(device("slow", match=["NVIDIA X1"], clock_mhz=1000),
                                    device("fast", match=["NVIDIA X1"], clock_mhz=2000)), "b.json")
    assert choose(props("NVIDIA X1", clockRate=1_950_000), clocked).peaks.device == "fast"
    tie = choose(props("NVIDIA X1"), clocked)
    assert tie.peaks.device == "slow" and "1 other entry match as well" in tie.reason


def test_an_empty_pattern_names_an_unnamed_device():
    entries = parse_peaks(user_file(device("our MI300X", match=[""], sms=304)), "u.json")
    assert choose(props("", 304), entries).peaks.device == "our MI300X"


def test_a_user_entry_with_one_fp64_rate_serves_both_kinds_of_fp64_work():
    (entry,) = parse_peaks(user_file(device(tflops={"fp64_vector": 20, "fp32": 40})), "v.json")
    assert entry.peaks.compute_peak("fp64", True) == entry.peaks.compute_peak("fp64", False) == 20e12
    assert entry.peaks.compute_peak("bf16", True) == 40e12 and entry.peaks.compute_peak("int8", True) is None


def test_a_minimal_user_entry():
    (entry,) = parse_peaks(user_file({"name": "NVIDIA L4", "tflops": {"fp8": 200}, "tbps": 0.3}), "m.json")
    assert entry.patterns == ("nvidial4",) and entry.sms is None and entry.peaks.clock == "not stated"
    assert entry.peaks.source == "user file m.json" and entry.peaks.compute_peak("fp8", True) == 200e12


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ("[]", "a JSON object with a 'devices' list"),
    ('{"devices": [], "extra": 1}', "a JSON object with a 'devices' list"),
    ('{"devices": []}', "non-empty list"),
    ('{"devices": {"a": 1}}', "non-empty list"),
    ('{"devices": [3]}', "devices[0]: a device is a JSON object, not int"),
    (user_file({"tflops": {"bf16": 1}, "tbps": 1}), "devices[0]: 'name' must be a non-empty string"),
    (user_file(device(name="  ")), "'name' must be a non-empty string"),
    (user_file(device(name=5)), "'name' must be a non-empty string"),
    ('{"devices": [{"name": "G", "tflops": {"bf16": NaN}, "tbps": 1}]}', "NaN is not a number"),
    ('{"devices": [{"name": "G", "tflops": {"bf16": 1}, "tbps": Infinity}]}', "Infinity is not a number"),
    ('{"devices": [{"name": "G", "tflops": {"bf16": 1e999}, "tbps": 1}]}', "finite positive number of TFLOP/s"),
    (user_file(device(tflops={"bf16": -5})), "devices[0] ('My GPU'): 'tflops'['bf16'] must be a finite positive"),
    (user_file(device(tflops={"bf16": 0})), "finite positive"),
    (user_file(device(tflops={"bf16": "989"})), "not '989'"),
    (user_file(device(tflops={"bf16": True})), "not True"),
    (user_file(device(tflops={"bf16": 9.89e14})), "at most 1e+06"),  # FLOP/s where TFLOP/s belong
    (user_file(device(tflops={"fp4": 10})), "unknown dtype 'fp4'"),
    (user_file(device(tflops={})), "'tflops' must be an object"),
    (user_file(device(tflops=[1, 2])), "'tflops' must be an object"),
    (user_file(device(tbps=None)), "'tbps' must be a finite positive number of TB/s"),
    (user_file(device(tbps=3.35e12)), "'tbps' must be"),
    (user_file(device(tflop={"bf16": 1})), "unknown field 'tflop'"),
    (user_file(device(sms=-1)), "'sms' must be a positive whole number"),
    (user_file(device(sms=1.5)), "'sms' must be a positive whole number"),
    (user_file(device(sms=True)), "'sms' must be a positive whole number"),
    (user_file(device(match="NVIDIA L4")), "'match' must be a list"),
    (user_file(device(match=[])), "'match' must be a list"),
    (user_file(device(match=[1])), "a 'match' pattern must be a string"),
    (user_file(device(match=["x" * 300])), "a 'match' pattern must be a string"),
    (user_file(device(clock_mhz=-1)), "'clock_mhz' must be"),
    (user_file(device(url="ftp://x")), "'url' must be an http(s) address"),
    (user_file(device(note="n" * 5000)), "'note' must be a non-empty string of at most 2,000"),
    (user_file(device(), device(name="my  gpu")), "devices[1] and devices[0] are both named 'my  gpu'"),
    (user_file(*[device(name=f"G{i}") for i in range(10_000)]), "10,000 devices, over the 1,000"),
    ('{"devices": [' + " " * 1_000_001 + "]}", "over 1,000,000 bytes"),
    ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ('{"devices": [{"name": "G", "tflops": {"bf16": 1' + "0" * 5000 + '}, "tbps": 1}]}', ""),
])
def test_hostile_user_files_are_refused_naming_the_file_and_entry(text, message):
    with pytest.raises(PeaksError) as refused:
        parse_peaks(text, "/home/me/peaks.json")
    assert str(refused.value).startswith("/home/me/peaks.json: ") and message in str(refused.value)
    assert len(str(refused.value)) < 600


def test_a_file_that_is_not_text_is_refused():
    with pytest.raises(PeaksError, match="f.json: a peaks file is text, not bytes"):
        parse_peaks(b'{"devices": []}', "f.json")


def test_peaks_json_ships_with_the_package():
    """setup.py's package_data names the file, as it does the schemas."""
    tree = ast.parse((REPO / "setup.py").read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    package_data = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "package_data"))
    assert package_data["kinetoscope.analysis.roofline"] == ["peaks.json"]
