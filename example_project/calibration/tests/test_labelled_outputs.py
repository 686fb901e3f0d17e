"""The calibration set: each case's labelled output is scored by the configured judge, and
`--callqa-calibrate` sets the scores beside the labels at the end of the run. These tests
check the set itself; whether the judge agrees with the labels is the calibration's verdict,
not a test's."""


def test_each_label_says_who_gave_it_and_how(callqa_case, callqa_result):
    """A label nobody can trace back is no calibration: it names its labeller and how it was
    reached, and the metric it labels is part of the scored result."""
    assert callqa_case.human_labels, f"{callqa_case.id} carries no human_labels"
    for metric, label in callqa_case.human_labels.items():
        assert label.labeler and label.note, f"{callqa_case.id}: {metric} has no labeler/note"
        assert metric in callqa_result.metrics, f"{callqa_case.id}: {metric} was not computed"
