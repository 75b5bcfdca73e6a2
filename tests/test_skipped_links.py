"""Issue 48: links out of the logdir are still not followed (a shared logdir must not point the tool at files
elsewhere), but now each door says so: one stderr line per link from the commands (the link, its target, the
remedy), a notice in the `runs` answer and the tab, and an option (`--allow-links-to`, TensorBoard's
`--kinetoscope_allow_links_to`, the variable KINETOSCOPE_ALLOW_LINKS_TO) that follows them."""
from __future__ import annotations

import argparse
import json
import os

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.cli.main import main as cli_main
from kinetoscope.server import routes
from kinetoscope.server.service import TraceService
from kinetoscope.server.tb_loader import KinetoscopeLoader
from kinetoscope.trace.discovery import SkippedLink, noting_skipped_links, scan_logdir
from kinetoscope.trace.storage import LINKED_ROOTS_ENV
from tensorboard.plugins import base_plugin


def small_trace() -> dict:
    events = [op("ProfilerStep#1", 0, 1000)]
    for i in range(12):
        events += [launch(10 + 50 * i, 5, 100 + i), kernel(f"k{i}", 20 + 60 * i, 40, 100 + i)]
    return trace_doc(events)


@pytest.fixture
def combined(tmp_path, monkeypatch):
    """`combined/` holding only a link to a run folder elsewhere, as `ln -s ~/runs/resnet combined/resnet` makes."""
    monkeypatch.delenv(LINKED_ROOTS_ENV, raising=False)
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    write_trace(runs / "resnet" / "worker0.1.pt.trace.json", small_trace())
    write_trace(runs / "single.7.pt.trace.json", small_trace())
    logdir = tmp_path / "combined"
    logdir.mkdir()
    (logdir / "resnet").symlink_to(runs / "resnet", target_is_directory=True)
    return logdir, runs


def runs_answer(logdir) -> dict:
    """The `runs` answer of a fresh service over `logdir`, after one scan."""
    service = TraceService(str(logdir), cache_dir=None, rescan_s=3600, decode_in_child=False)
    try:
        service.scan_now()
        return routes.runs_impl(service)
    finally:
        service.close()


def lines_naming(err: str, link) -> list[str]:
    return [line for line in err.splitlines() if str(link) in line]


@pytest.mark.parametrize("command", ["report", "index"])
def test_a_logdir_of_only_a_link_out_says_so_once_and_exits_1(combined, capsys, command):
    logdir, runs = combined
    assert cli_main([command, str(logdir)]) == 1
    err = capsys.readouterr().err
    (line,) = lines_naming(err, logdir / "resnet")
    assert str(runs / "resnet") in line and "--allow-links-to" in line and LINKED_ROOTS_ENV in line


def test_diff_names_the_link_of_a_side_it_cannot_read(combined, capsys, tmp_path):
    logdir, runs = combined
    assert cli_main(["diff", str(logdir), str(runs / "single.7.pt.trace.json"), "--no-cache"]) == 2  # a side with no
    # trace is a usage error for diff (1 means a rule broke)
    assert len(lines_naming(capsys.readouterr().err, logdir / "resnet")) == 1


def test_allow_links_to_follows_them(combined, capsys, monkeypatch):
    logdir, runs = combined
    assert cli_main(["report", str(logdir), "--allow-links-to", str(runs), "--format", "json", "--no-cache"]) == 0
    out = capsys.readouterr()
    assert [t["run"] for t in json.loads(out.out)["traces"]] == ["resnet"] and "not followed" not in out.err
    assert LINKED_ROOTS_ENV not in os.environ  # the option holds for its run only
    monkeypatch.setenv(LINKED_ROOTS_ENV, str(runs))  # the variable, as before
    assert cli_main(["report", str(logdir), "--no-cache"]) == 0


def test_a_file_named_on_the_command_line_is_read_through_a_link(combined, capsys):
    logdir, _ = combined
    assert cli_main(["report", str(logdir / "resnet" / "worker0.1.pt.trace.json"), "--no-cache"]) == 0
    assert "not followed" not in capsys.readouterr().err


def test_links_to_files_and_folders_out_are_reported_loops_and_links_inside_are_not(combined):
    logdir, runs = combined
    (logdir / "single.7.pt.trace.json").symlink_to(runs / "single.7.pt.trace.json")
    (logdir / "notes.txt").symlink_to(runs / "single.7.pt.trace.json")  # not a trace's name: not worth a line
    (logdir / "loop").symlink_to(logdir, target_is_directory=True)
    write_trace(logdir / "own" / "w.1.pt.trace.json", small_trace())
    (logdir / "own_again").symlink_to(logdir / "own", target_is_directory=True)
    skipped: list[SkippedLink] = []
    with noting_skipped_links(skipped.append):
        found = scan_logdir(str(logdir))
    assert [f.run for f in found] == ["own"]  # a folder reached twice (a link inside) is listed once
    assert sorted((s.in_logdir, s.target) for s in skipped) == [("resnet", str(runs / "resnet")),
                                                                ("single.7.pt.trace.json",
                                                                 str(runs / "single.7.pt.trace.json"))]


def test_the_runs_answer_counts_the_links_and_names_them_inside_the_logdir_only(combined):
    logdir, runs = combined
    (logdir / "also").symlink_to(runs, target_is_directory=True)
    body = runs_answer(logdir)
    assert body["runs"] == []
    assert body["skipped_links"]["count"] == 2 and sorted(body["skipped_links"]["links"]) == ["also", "resnet"]
    assert body["skipped_links"]["option"] == "--kinetoscope_allow_links_to"
    assert str(runs) not in json.dumps(body)  # where they lead stays in TensorBoard's log


def test_tensorboards_flag_follows_them(combined, monkeypatch):
    logdir, runs = combined
    parser = argparse.ArgumentParser()
    loader = KinetoscopeLoader()
    loader.define_flags(parser)
    flags = parser.parse_args(["--kinetoscope_allow_links_to", str(runs)])
    monkeypatch.setenv(LINKED_ROOTS_ENV, "")  # recorded, so what `load` sets is undone afterwards
    monkeypatch.setenv("KINETOSCOPE_PRELOAD_FIRST", "0")
    loader.fix_flags(flags)
    plugin = loader.load(base_plugin.TBContext(logdir=str(logdir), flags=flags, multiplexer=None))
    assert str(runs) in os.environ[LINKED_ROOTS_ENV].split(os.pathsep)
    del plugin
    body = runs_answer(logdir)
    assert [r["name"] for r in body["runs"]] == ["resnet"] and body["skipped_links"]["count"] == 0
