"""The budgets are TensorBoard flags too (`kinetoscope.server.tb_loader`): parsed, validated, applied on load."""
from __future__ import annotations

import argparse
import os

import pytest
from kinetoscope.server.tb_loader import FLAGS, KinetoscopeLoader
from kinetoscope.trace import budgets
from tensorboard.plugins import base_plugin


@pytest.fixture
def parser():
    parser = argparse.ArgumentParser()
    KinetoscopeLoader().define_flags(parser)
    return parser


def test_every_budget_is_a_flag_and_none_is_required(parser):
    assert {env for _, env, _, _ in budgets.CLI_OPTIONS} <= {env for _, env, _ in FLAGS}
    flags = parser.parse_args([])
    assert all(getattr(flags, f"kinetoscope_{name}") is None for name, _, _ in FLAGS)


def test_a_given_flag_sets_its_variable_on_load(parser, monkeypatch, tmp_path):
    for _, env, _ in FLAGS:  # recorded by monkeypatch (set, then unset), so what `load` sets is undone afterwards
        monkeypatch.setenv(env, "1")
        monkeypatch.delenv(env)
    flags = parser.parse_args(["--kinetoscope_max_events", "10", "--kinetoscope_max_event_bytes", "4096"])
    loader = KinetoscopeLoader()
    loader.fix_flags(flags)
    plugin = loader.load(base_plugin.TBContext(logdir=str(tmp_path), flags=flags, multiplexer=None))
    assert plugin.plugin_name == "kinetoscope"
    assert budgets.event_budget().max_events == 10 and budgets.event_budget().event_bytes == 4096
    assert os.environ.get(budgets.INFLATE_RATIO_ENV) is None  # flags not given leave the environment alone


def test_a_bad_flag_is_a_flags_error(parser):
    with pytest.raises(base_plugin.FlagsError, match="kinetoscope_max_events"):
        KinetoscopeLoader().fix_flags(parser.parse_args(["--kinetoscope_max_events", "-3"]))
