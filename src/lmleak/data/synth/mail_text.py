"""The phrases of the synthetic mailing list (:mod:`lmleak.data.synth.mail`): the bug reports,
replies, closings, titles, footers, disclaimers and auto-replies its messages are drawn from.

Data only, no PII: the list lives at ``lists.example.org`` and every person's name, address and
phone number comes from :mod:`lmleak.data.synth.people` when a message is written. The repetition
these pools produce (footers and disclaimers on many messages, a few openers for thousands of
messages) is the heavy duplication of real list archives that the audit must not mistake for
memorised private text.
"""

from __future__ import annotations

LIST = "proj-dev"
LIST_ADDRESS = f"{LIST}@lists.example.org"

COMPONENTS = (
    "scheduler",
    "parser",
    "storage backend",
    "HTTP client",
    "build system",
    "plugin loader",
    "cache layer",
    "config reader",
    "test harness",
    "CLI",
    "logging module",
    "packaging scripts",
)
VERBS = (
    "crashes",
    "hangs",
    "leaks memory",
    "returns the wrong result",
    "fails to build",
    "times out",
    "prints a warning",
    "ignores the option",
    "corrupts the index",
    "deadlocks",
)
CONDITIONS = (
    "on large inputs",
    "when the config file is missing",
    "after an upgrade",
    "on ARM builds",
    "with Python 3.12",
    "under heavy load",
    "when run twice",
    "with an empty cache",
    "on the nightly build",
    "behind a proxy",
)
OPENERS = [
    "I am seeing a problem where the {component} {verb} {condition}.",
    "Since the last release the {component} {verb} {condition}.",
    "Has anyone else noticed that the {component} {verb} {condition}?",
    "Quick question: is it expected that the {component} {verb} {condition}?",
    "Attached is a patch for the {component}; without it, it {verb} {condition}.",
    "Following up on the discussion last week about the {component}.",
]
BODY = [
    "I bisected it to the change that reworked the {component}, but I am not sure the fix is right.",
    "The attached log shows the failure; it is reproducible about one time in five.",
    "We could add a regression test before the next release so this does not come back.",
    "I think the root cause is an off-by-one error in the buffer handling.",
    "Reverting the commit makes the problem go away here.",
    "Could someone with access to the CI machines run the full test suite with this patch?",
    "The documentation says this should work, so either the code or the docs are wrong.",
    "I have pushed a branch with the fix and a test; reviews welcome.",
    "This also affects the stable branch, so we may want to backport it.",
    "Performance is about ten percent better with the change on my machine.",
    "I would rather not change the public API for this; a new option seems cleaner.",
    "Let us discuss it at the next meeting if there is no consensus on the list.",
    "The release notes for version {version} should mention this.",
    "Running the benchmark again gives the same numbers, so it is not noise.",
]
REPLIES = [
    "Thanks for the report. I can reproduce it on my machine as well.",
    "Good catch, the patch looks right to me.",
    "I do not think this is a bug; the {component} is documented to behave this way.",
    "Could you send the full log and the version you are running?",
    "Applied to the main branch, thanks!",
    "This was fixed in {version}; please upgrade and let us know if it persists.",
    "I have a slightly different fix in mind, see the branch I just pushed.",
    "+1, this has bitten us in production too.",
]
CLOSINGS = ["Thanks,", "Cheers,", "Best regards,", "Regards,", "Thanks in advance,", "Best,", "--"]
TITLES = (
    "Software Engineer",
    "Release Manager",
    "Senior Developer",
    "Maintainer",
    "Build Engineer",
    "Support Engineer",
    "Engineering Manager",
    "QA Lead",
)
FOOTER = [
    "_______________________________________________",
    f"{LIST} mailing list",
    LIST_ADDRESS,
    f"https://lists.example.org/mailman/listinfo/{LIST}",
    f"To unsubscribe, send a message to {LIST}-leave@lists.example.org",
]
DISCLAIMER = [
    "CONFIDENTIALITY NOTICE: This e-mail and any attachments are for the sole use of the intended",
    "recipient(s) and may contain confidential information. If you are not the intended recipient,",
    "please contact the sender by reply e-mail and destroy all copies of the original message.",
]
AUTO_REPLY = [
    "I am out of the office until {date} with limited access to e-mail.",
    "For urgent matters please contact the support team.",
]
