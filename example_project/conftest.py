"""Project-wide evaluation settings beyond the ini file: a metric of our own.

pytest-callqa calls `pytest_callqa_register_metrics` once per process (the controller and
every xdist worker). The metric is computed for every text output, shown in the scorecard and
the JSON report, and checked by tests/test_call_summaries.py; it is not weighted into the text
score.
"""

import re

import pytest

from pytest_callqa import Bands, MetricSpec

CONTACT_DETAILS = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.]+"          # an e-mail address
    r"|\(?\b\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}\b"  # a North American phone number
)

NO_CONTACT_DETAILS = MetricSpec(
    id="summary_has_no_contact_details",
    task="text",
    name="Summary Free of Contact Details",
    description="1 when neither the call purpose nor any highlight quotes an e-mail address "
                "or a phone number.",
    scale="0/1",
    threshold="= 1",
    bands=Bands(good=1.0),
)


def summary_has_no_contact_details(case, output, result):
    if not isinstance(output, dict) or not isinstance(output.get("summary"), dict):
        return None  # not scored: the output has no summary to check
    summary = output["summary"]
    texts = [str(summary.get("call_purpose", ""))] + [str(h) for h in summary.get("highlights", [])]
    return 0.0 if any(CONTACT_DETAILS.search(text) for text in texts) else 1.0


# Optional: a run with the plugin switched off (`-p no:callqa`) has no such hook to call, and
# pytest would refuse a conftest.py implementing a hook it does not know.
@pytest.hookimpl(optionalhook=True)
def pytest_callqa_register_metrics(registry, config):
    registry.register_metric(NO_CONTACT_DETAILS, summary_has_no_contact_details)
