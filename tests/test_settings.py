"""Settings: camelCase from the client, bad values fall back with a message, and the LLM section
layers over the environment (a client that sets nothing leaves PTXLS_LLM_* in force)."""

from __future__ import annotations

from types import SimpleNamespace

from ptxls.server.features.lowering_feature import lowering_settings
from ptxls.server.settings import settings_from_dict


def test_camel_case_keys_and_defaults():
    s, problems = settings_from_dict(
        {"debounceMs": 40, "ptxasPath": "/x/ptxas", "saveOnlyAboveBytes": 10}
    )
    assert (s.debounce_ms, s.ptxas_path, s.save_only_above_bytes, s.arch) == (
        40,
        "/x/ptxas",
        10,
        None,
    )
    assert problems == []


def test_wrong_types_fall_back_with_one_message_each():
    s, problems = settings_from_dict({"debounceMs": "fast", "arch": 90, "unknownKey": 1})
    assert s.debounce_ms == 150 and s.arch is None
    assert len(problems) == 2 and any("debounceMs" in p for p in problems)


def test_not_an_object():
    s, problems = settings_from_dict(["nope"])  # type: ignore[arg-type]
    assert s.debounce_ms == 150 and problems


def test_llm_section_over_the_environment(monkeypatch):
    monkeypatch.setenv("PTXLS_LLM_TEMPERATURE", "0.2")
    monkeypatch.setenv("PTXLS_MODEL", "env-model")
    s, _ = settings_from_dict({})
    llm, _ = lowering_settings(SimpleNamespace(settings=s))
    assert (llm.temperature, llm.model) == (0.2, "env-model")  # the client said nothing
    s, _ = settings_from_dict(
        {"llm": {"model": "client-model", "temperature": 0.0, "maxRounds": 3}, "arch": "sm_80"}
    )
    llm, _ = lowering_settings(SimpleNamespace(settings=s))
    assert (llm.temperature, llm.model, llm.rounds, llm.arch) == (0.0, "client-model", 3, "sm_80")


def test_bad_llm_values_are_reported_and_an_api_key_setting_is_refused():
    _, problems = settings_from_dict({"llm": {"temperature": "hot", "apiKey": "sk-nope"}})
    assert any("temperature" in p for p in problems)
    assert any("apiKey ignored" in p for p in problems)
    assert not any("sk-nope" in p for p in problems)
