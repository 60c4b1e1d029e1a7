"""The one-line messages of lmleak's exception tree."""

from __future__ import annotations

from lmleak.errors import ConfigError, did_you_mean


def test_a_suggestion_ending_in_a_question_mark_is_not_followed_by_a_full_stop():
    # regression: "unknown key 'exposur'. Did you mean 'exposure'?. Fix: ..."
    reason = "unknown key 'exposur'." + did_you_mean("exposur", ["exposure", "report"])
    e = ConfigError(reason, field="analyses.exposur", hint="allowed keys here: exposure, report")
    assert str(e) == (
        "field 'analyses.exposur': unknown key 'exposur'. Did you mean 'exposure'? "
        "Fix: allowed keys here: exposure, report"
    )
    assert str(ConfigError("bad value", hint="use 1")) == "bad value. Fix: use 1"
