import pytest

from d2lmp.model.dp_model import buckets_needed, predict_step


def test_one_device_has_no_communication():
    p = predict_step(0.3, 1e8, 1, 1e-5, 1e-9)
    assert p.step_s == 0.3 and p.comm_s == 0 and p.efficiency(0.3) == 1.0


def test_no_overlap_exposes_all_communication():
    p = predict_step(0.3, 100e6, 4, 0.0, 1e-9, bucket_bytes=25e6, overlap=False)
    # 4 buckets × 2·3·(25e6/4)·1e-9 s = 4 × 0.0375 s
    assert p.comm_s == pytest.approx(0.15)
    assert p.step_s == pytest.approx(0.3 / 4 + 0.15)


def test_overlap_hides_communication_behind_backward_but_not_the_last_bucket():
    fast = predict_step(0.3, 100e6, 4, 0.0, 1e-11, bucket_bytes=25e6)
    assert fast.exposed_comm_s == pytest.approx(fast.comm_s / 4)  # only the last of four equal buckets
    slow = predict_step(0.3, 100e6, 4, 0.0, 1e-8, bucket_bytes=25e6)
    assert slow.exposed_comm_s == pytest.approx(slow.comm_s - 0.3 / 4 * 2 / 3)
    assert slow.efficiency(0.3) < fast.efficiency(0.3)


def test_bad_input_and_bucket_count():
    assert buckets_needed(100, 30) == 4
    with pytest.raises(ValueError):
        predict_step(0.3, 1e8, 0, 1e-5, 1e-9)
    with pytest.raises(ValueError):
        predict_step(-1, 1e8, 2, 1e-5, 1e-9)
