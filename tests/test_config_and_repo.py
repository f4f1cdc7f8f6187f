"""memory-config.yaml validation, `memory config`, and finding the repo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke_memory

from memrepo.config import EMBEDDERS, SCHEMA, defaults, load_config, render_default_config
from memrepo.errors import ConfigError, MemrepoError
from memrepo.index.embedders import BUILDERS, get_embedder
from memrepo.repo import discover


def test_rendered_default_config_holds_every_setting(tmp_path: Path) -> None:
    (tmp_path / "memory-config.yaml").write_text(render_default_config())
    assert load_config(tmp_path) == defaults()
    text = render_default_config()
    for section, keys in SCHEMA.items():
        for key in keys:
            assert f"  {key}:" in text, f"{section}.{key}"


def test_the_config_names_every_embedder_the_index_builds() -> None:
    """config owns the names (no config -> index import); the index builds each one."""
    assert SCHEMA["search"]["embedder"].choices == EMBEDDERS
    assert ("none", *BUILDERS) == EMBEDDERS
    for name in EMBEDDERS:
        emb = get_embedder(name)
        assert emb is None if name == "none" else emb.id.startswith(f"{name}-")


@pytest.mark.parametrize(
    ("yaml_text", "expected", "line"),
    [
        ("search:\n  bm25_wieght: 0.5\n", "unknown key 'search.bm25_wieght'", 2),
        ("serch:\n  bm25_weight: 0.5\n", "unknown key 'serch'", 1),
        ("search:\n  bm25_weight: high\n", "'search.bm25_weight' must be a number", 2),
        ("git:\n  auto_push: 'yes'\n", "'git.auto_push' must be a true/false", 2),
        ("context_compiler:\n  token_budget: true\n", "'context_compiler.token_budget' must be", 2),
        ("lifecycle:\n  extraction_trigger: weekly\n", "must be one of on_session_end", 2),
        ("validation:\n  secrets_allowlist: [1]\n", "list of strings", 2),
        ("validation:\n  secrets_allowlist: ['(a+)+b']\n",
         "'validation.secrets_allowlist' entry '(a+)+b' can backtrack catastrophically", 2),
        ("search:\n  bm25_weight: 1\nsearch: {}\n", "duplicate key 'search'", 3),
        ("search: [\n", "invalid YAML", 2),
        ("lifecycle:\n  condensation_schedule: foo\n",
         "'lifecycle.condensation_schedule' must be a cron expression of 5 fields", 2),
        ("lifecycle:\n  weekly_schedule: '@fortnightly'\n", "is not a valid cron expression", 2),
        ("lifecycle:\n  pruning_schedule: '0 25 * * 0'\n",
         "'lifecycle.pruning_schedule' is not a valid cron expression: hour field '25' is out "
         "of range 0-23", 2),
        ("lifecycle:\n  pruning_schedule: '0 x * * 0'\n", "hour field 'x' is not valid", 2),
        ("search:\n  vector_weight: 0.3\n  bm25_weight: -5\n",
         "'search.bm25_weight' must be at least 0, got -5", 3),
        ("validation:\n  memory_error_lines: -1\n",
         "'validation.memory_error_lines' must be at least 1, got -1", 2),
        ("validation:\n  max_file_kb: 0\n", "'validation.max_file_kb' must be above 0", 2),
        ("llm:\n  max_concurrency: 0\n", "'llm.max_concurrency' must be at least 1", 2),
        ("context_compiler:\n  history_share: 1.5\n", "must be at most 1, got 1.5", 2),
        # hostile values (issue #14): NaN passes every comparison, inf every lower bound
        ("search:\n  bm25_weight: .nan\n", "'search.bm25_weight' must be a finite number", 2),
        ("search:\n  recency_per_day: .inf\n", "must be a finite number, got inf", 2),
        ("search:\n  rrf_k: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32 levels", 2),
        ("search:\n  rrf_k: " + "[" * 5000 + "]" * 5000 + "\n", "invalid YAML", 2),
        ("search:\n  rrf_k: " + "9" * 5000 + "\n", "invalid number", 2),
        ("search:\n\trrf_k: 5\n", "invalid YAML", 2),
        ("context_compiler:\n  token_budget: 1" + "0" * 400 + "\n",
         "'context_compiler.token_budget' must be at most 1e+12, got a number of 401 digits", 2),
    ],
)
def test_bad_config_names_key_path_and_line(
    tmp_path: Path, yaml_text: str, expected: str, line: int
) -> None:
    (tmp_path / "memory-config.yaml").write_text(yaml_text)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert expected in str(err.value)
    assert str(err.value).startswith(f"memory-config.yaml:{line}:")


def test_a_config_that_is_not_utf8_names_its_line_and_a_bom_is_fine(tmp_path: Path) -> None:
    cfg = tmp_path / "memory-config.yaml"
    cfg.write_bytes(b"search:\n  rrf_k: 5\n  embedding_model: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"^memory-config.yaml:3: not UTF-8 text \(byte 0xe9\)"):
        load_config(tmp_path)
    cfg.write_bytes(b"\xef\xbb\xbfsearch:\n  rrf_k: 5\n")
    assert load_config(tmp_path)["search"]["rrf_k"] == 5


def test_limits_accept_their_edges_and_cron_accepts_real_schedules(tmp_path: Path) -> None:
    (tmp_path / "memory-config.yaml").write_text(
        "search:\n  bm25_weight: 0\n  recency_per_day: 0\n"
        "lifecycle:\n  condensation_schedule: '*/15 1-5 * * mon-fri'\n"
        "  pruning_schedule: '0 0 1,15 * 7'\n  weekly_schedule: '@weekly'\n"
        "context_compiler:\n  history_share: 1\n"
    )
    cfg = load_config(tmp_path)
    assert cfg["search"]["bm25_weight"] == 0
    assert cfg["lifecycle"]["condensation_schedule"] == "*/15 1-5 * * mon-fri"


def test_partial_config_is_merged_over_defaults(tmp_path: Path) -> None:
    (tmp_path / "memory-config.yaml").write_text("search:\n  bm25_weight: 1\n")
    cfg = load_config(tmp_path)
    assert cfg["search"]["bm25_weight"] == 1
    assert cfg["search"]["vector_weight"] == defaults()["search"]["vector_weight"]


def test_config_show_and_errors_through_the_cli(memrepo_root: Path) -> None:
    proc = invoke_memory(memrepo_root, "config", "show", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == defaults()
    (memrepo_root / "memory-config.yaml").write_text("watchers:\n  gate_modle: haiku\n")
    proc = invoke_memory(memrepo_root, "config", "show")
    assert proc.returncode == 1
    assert "memory-config.yaml:2: unknown key 'watchers.gate_modle'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_discover_prefers_flag_then_env_then_walks_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        (d / "knowledge" / "journal").mkdir(parents=True)
        (d / "memory-config.yaml").write_text("")
    assert discover(cwd=a / "knowledge" / "journal").root == a.resolve()
    monkeypatch.setenv("MEMORY_REPO", str(b))
    assert discover(cwd=a).root == b.resolve()
    assert discover(str(a), cwd=tmp_path).root == a.resolve()
    monkeypatch.delenv("MEMORY_REPO")
    with pytest.raises(MemrepoError, match="no memory repo found"):
        discover(cwd=tmp_path)
    with pytest.raises(MemrepoError, match="is not a memory repo"):
        discover(str(tmp_path))


def test_repo_flag_on_the_cli(memrepo_root: Path, tmp_path: Path) -> None:
    proc = invoke_memory(
        tmp_path, "--repo", str(memrepo_root), "config", "get", "lifecycle.memory_line_cap"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "200"
    proc = invoke_memory(tmp_path, "config", "get", "lifecycle.memory_line_cap")
    assert proc.returncode == 1 and "no memory repo found" in proc.stderr


def test_ranking_defaults_are_the_config_defaults() -> None:
    """The index reads settings without loading YAML, so ranking keeps its own defaults:
    they must equal the schema's, or a repo without a key would rank differently."""
    from memrepo.config import defaults
    from memrepo.index.ranking import Settings, settings_from_config

    assert settings_from_config({}) == settings_from_config(defaults()["search"]) == Settings()


def test_expansion_weight_auto_follows_the_embedder(tmp_path: Path) -> None:
    """``search.expansion_weight: auto`` (the default) is 0.2 with an embedder and 0 with
    FTS5 alone (what measured best with each); a number is kept; another word is refused,
    naming the key and its line."""
    from memrepo.index.ranking import AUTO_EXPANSION, settings_from_config

    search = defaults()["search"]
    assert search["expansion_weight"] == "auto" and AUTO_EXPANSION > 0
    assert settings_from_config(search).expansion_weight == 0.0
    assert settings_from_config({**search, "embedder": "minilm"}).expansion_weight == 0.2
    kept = {**search, "embedder": "minilm", "expansion_weight": 0}
    assert settings_from_config(kept).expansion_weight == 0.0
    (tmp_path / "memory-config.yaml").write_text(
        "search:\n  embedder: hash\n  expansion_weight: sometimes\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert str(err.value).startswith("memory-config.yaml:3:")
    assert "must be a number or auto" in str(err.value)


def test_keys_memrepo_never_read_are_ignored_and_named_by_doctor(crepo) -> None:
    """Seed audit: search.embedding_model / embedding_dimensions were accepted, never used."""
    from conftest import invoke_memory

    from memrepo.config import IGNORED_KEYS, render_default_config

    assert "embedding_model" not in render_default_config()  # new repos don't get them
    cfg = crepo / "memory-config.yaml"
    cfg.write_text(cfg.read_text().replace(
        "search:\n", "search:\n  embedding_model: nonexistent-model\n  embedding_dimensions: 7\n", 1))
    assert invoke_memory(crepo, "config", "get", "search.embedder").returncode == 0
    said = invoke_memory(crepo, "doctor").stdout
    assert all(key in said for key in IGNORED_KEYS) and "ignored" in said
