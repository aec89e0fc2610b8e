"""A sharding pin the table's TorchRec module cannot take stops at validate (issue 22).

DIN's behaviour-sequence tables are a TorchRec EmbeddingCollection, whose sharder (torchrec
1.8.0 torchrec/distributed/embedding.py EmbeddingCollectionSharder.sharding_types) takes
data_parallel, table_wise, column_wise and row_wise only: table_row_wise raised at model build.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from reclaunch.errors import SpecError
from reclaunch.spec import parse_spec
from reclaunch.spec.sharders import EBC, EC, MODULE_SHARDING, is_sequence, module_type
from tests.conftest import EXAMPLES

DIN = (EXAMPLES / "azure-din-nd96amsr.yaml").read_text()
ITEM = "{name: item_id, rows: 10e6, pooling_factor: 50}"


def sub(old: str, new: str, text: str = DIN) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_sequence_table_pinned_table_row_wise_is_refused_on_its_line():
    text = sub(ITEM, ITEM[:-1] + ", sharding: table_row_wise}")
    with pytest.raises(SpecError) as e:
        parse_spec(text, "din.yaml")
    assert e.value.exit_code == 2
    (line,) = e.value.problems
    assert line.startswith(f"din.yaml:{line_of(text, 'item_id')}: model.tables[1].sharding: ")
    assert "table_row_wise cannot shard item_id" in line and "EmbeddingCollection" in line
    assert "data_parallel, table_wise, row_wise, column_wise" in line


def test_whole_model_pin_is_refused_once_at_model_sharding():
    text = sub("  preset: din\n", "  preset: din\n  sharding: table_row_wise\n")
    with pytest.raises(SpecError) as e:
        parse_spec(text, "din.yaml")
    (line,) = e.value.problems
    assert line.startswith(f"din.yaml:{line_of(text, 'sharding: table_row_wise')}: model.sharding: ")
    assert "item_id" in line


@pytest.mark.parametrize("kind", MODULE_SHARDING[EC])
def test_every_type_the_module_takes_validates(kind):
    parse_spec(sub(ITEM, ITEM[:-1] + f", sharding: {kind}}}"), "din.yaml")


def test_pooled_tables_of_din_keep_every_type():
    spec = parse_spec(sub("{name: user_id, rows: 20e6}", "{name: user_id, rows: 20e6, sharding: table_row_wise}"))
    m = spec.model
    assert [module_type(m, t) for t in m.tables] == [EBC, EC, EC, EBC]
    assert "table_row_wise" in MODULE_SHARDING[EBC] and "table_row_wise" not in MODULE_SHARDING[EC]
    # only DIN has a behaviour sequence: a multi-hot DCNv2 table stays pooled
    dcn = parse_spec((EXAMPLES / "gcp-dcnv2-a3mega.yaml").read_text())
    assert not any(is_sequence(dcn.model, t) for t in dcn.model.tables)


def test_validate_cli_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "din.yaml"
    bad.write_text(sub(ITEM, ITEM[:-1] + ", sharding: table_row_wise}"))
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "validate", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"{bad}:") and "model.tables[1].sharding: table_row_wise cannot shard" in line
