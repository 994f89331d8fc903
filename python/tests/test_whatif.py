"""What-if from Python: a snapshot as a path or as the dict PyTorch returns,
the recorded row and its check, the recommendation, the page."""

import gzip
import pickle

import pytest

import tensormem

H200_SNAPSHOTS = "bench/results/gpu/2026-11-28-h200-2/snapshots"


@pytest.fixture(scope="module")
def snapshot_path(source_dir):
    return source_dir / H200_SNAPSHOTS / "max_split_128.pickle.gz"


@pytest.fixture(scope="module")
def snapshot_dict(snapshot_path):
    # What torch.cuda.memory._snapshot() returns (the file is its pickle).
    with gzip.open(snapshot_path) as file:
        return pickle.load(file)


def quick(source, candidates=None, **options):
    return tensormem.whatif(source, candidates, min_limit=False, timing=False, **options)


def test_snapshot_path_has_recorded_row_and_advice(snapshot_path, tmp_path):
    result = quick(snapshot_path)
    recorded = result.recorded
    assert recorded["config"] == "max_split_size_mb:128"
    assert recorded["matches"] and recorded["as_run"]["divergences"] == 0
    # The recorded settings join the default candidates, and their row is
    # the replay as the GPU ran it: the recorded peak exactly.
    labels = [row["candidate"] for row in result.rows]
    assert labels[1] == "pytorch config=max_split_size_mb:128" and len(labels) == 6
    assert result.rows[1]["replayed_as_run"]
    assert result.rows[1]["peak_reserved_bytes"] == recorded["peak_reserved_bytes"]

    advice = result.recommendation
    baseline = advice["baseline"]["peak_reserved_bytes"]
    pytorch_peaks = [row["peak_reserved_bytes"] for row in result.rows
                     if row["allocator_config"].startswith("bfc(pytorch")]
    assert advice["best_pytorch"]["peak_reserved_bytes"] == min(pytorch_peaks)
    assert advice["best_pytorch"]["saving_bytes"] == baseline - min(pytorch_peaks)
    assert advice["tight"]["candidate"] == "tight"
    assert any("CUDA plug-in" in line for line in advice["text"])
    assert "recorded (PyTorch on the GPU)" in str(result)

    page = tmp_path / "whatif.html"
    result.to_html(page, title="max split 128")
    text = page.read_text()
    assert "max split 128" in text and "Recommendation" in text
    assert result.to_dict()["recorded"]["matches"]


def test_snapshot_dict_is_the_same_workload(snapshot_path, snapshot_dict):
    assert tensormem.read_trace(snapshot_dict).text() == tensormem.read_trace(snapshot_path).text()
    from_dict = quick(snapshot_dict, ["pytorch", "tight"])
    from_path = quick(snapshot_path, "pytorch; tight")
    assert from_dict.rows == from_path.rows
    assert from_dict.recorded == from_path.recorded


def test_trace_without_recording_compares_against_pytorch_defaults(source_dir):
    trace = tensormem.read_trace(source_dir / "data/models/resnet50.train_b8.trace.gz")
    result = quick(trace, "pytorch config=max_split_size_mb:512; pytorch; tight",
                   device_memory="64GiB")
    assert result.recorded is None
    assert result.recommendation["baseline"]["candidate"] == "pytorch"
    assert all(row["fits_device_memory"] for row in result.rows)
    assert result.device_memory == 64 << 30
    assert quick(trace, "tf; tight").recommendation is None


def test_bad_candidates_and_bad_snapshot_dicts():
    trace = tensormem.trace_from_buffers([64], [0], [1])
    with pytest.raises(ValueError, match="candidate 'nosuch'"):
        quick(trace, "tf; nosuch")
    with pytest.raises(ValueError, match="snapshot dict"):
        quick({"device_traces": 5})
    with pytest.raises(ValueError, match="snapshot dict"):
        tensormem.read_trace({"segments": "no"})
    with pytest.raises(ValueError, match="format 'pytorch'"):
        tensormem.read_trace({"segments": []}, "rmm")
