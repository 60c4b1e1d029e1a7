"""Every worked example the pages show, and how ``make docs`` (``tools/make_docs.py``) makes it.

Each runs in a fresh temporary folder on synthetic data with fixed seeds, one thread. An example
that trains a model, or reads the million-token corpus of docs/real-data.md, or takes more than about
15 s, is ``slow`` (checked by
``pytest -m slow``); the others run in the default suite, and together take well under a minute.
Durations are replaced by ``<s>`` (``subs``): they are the one thing a run does not repeat.
"""

from __future__ import annotations

import json

from make_docs import Cmd, Example, Tolerance

#: "9.2 s", "(12 s)", "in 1.43 s": a duration, which no run repeats
SECONDS = (r"\b\d+(?:\.\d+)? s\b", "<s> s")
#: a trained model's file hash: the weights differ in their last bits between CPUs (AVX2, AVX-512)
FINGERPRINTS = (r"fingerprint [0-9a-f]{12} -> [0-9a-f]{12}", "fingerprint <hash> -> <hash>")
#: float32 scores of a model: far inside 1e-4 on every CPU tried, not always to the sixth printed digit
FLOAT32 = Tolerance("float32 kernels differ in the last bits between CPUs (AVX2, AVX-512)", rel=1e-4)

# --- docs/dp-audit.md: the tiny recipe of its examples (synth customersim 8 users x 2 dialogues) ---
DP_CORPUS = "lmleak synth customersim --out data --users 8 --dialogs-per-user 2 --seed 0 > /dev/null"
TINY = (
    "--m 64 --r 64 --mode nodp --epochs 8 \\\n    --lr 5e-3 --seq-len 32 --width 32 --layers 1 --heads 2 "
    "--vocab-size 300 --holdout-users 0"
)
# the demo's recipes (docs/dp-audit.md, "A DP audit of the demo's DP model"), 256 canaries
DEMO_CORPUS = "lmleak synth customersim --out data --users 16 --dialogs-per-user 3 --seed 0"
DEMO_DP = (
    "--m 256 --mode dp --epochs 3 \\\n    --noise-multiplier 0.8 --batch-size 16 --seq-len 128 --lr 3e-3 "
    "--vocab-size 2000 --holdout-users 0"
)
DEMO_NODP = (
    "--m 256 --mode nodp --epochs 12 \\\n    --batch-size 16 --seq-len 128 --lr 3e-3 --vocab-size 2000 "
    "--holdout-users 0"
)

#: docs/security.md: one person spelt four ways, another two (a combining accent)
SIX = "".join(
    json.dumps({"user_id": u, "doc_id": f"d{i}", "text": t}, ensure_ascii=False) + "\n"
    for i, (u, t) in enumerate(
        [
            ("alice", "Hello, I am Alice and my order is late again."),
            ("Alice", "Please call me back at (555) 555-0100 today."),
            ("alice ", "My e-mail is alice@example.org, thanks."),
            ("\u200balice", "Any news on the refund I asked for?"),
            ("josé", "Hola, the parcel never arrived here."),
            ("jose\u0301", "Can you check tracking for me, please?"),
        ]
    )
)

#: the person of docs/probing.md and docs/commands.md: user-0 of the synthetic subjects file
ME = (
    "python -c \"import json; d = json.loads(open('small/subjects.jsonl').readline()); "
    "print(json.dumps({k: d[k] for k in ['name', 'phone', 'email', 'address', 'relations', "
    "'university', 'user_id']}, indent=2, ensure_ascii=False))\" > me.json"
)

#: the person's page (me.html) as the text a reader sees: its summary and the email address's paragraph
PAGE_TEXT = (
    "python -c \"import html, re; t = open('me.html', encoding='utf-8').read(); "
    "t = html.unescape(re.sub(r'\\s+', ' ', re.sub(r'<[^>]+>', ' ', t))); "
    "a = t.index('In short'); b = t.index('Your details'); e = t.index('We asked the model for your email'); "
    "f = t.index('Your address'); print(t[a:b].strip()); print(); print(t[e:f].strip())\" | fold -s -w 100"
)

# --- docs/quick-audit.md, README.md, docs/security.md: the quick audit of a small GPT on synth mail ---
MAIL = "lmleak synth mail --out mail --scale 0.05 --seed 1"
GPT1 = "--epochs 1 --layers 1 --width 32 --heads 2 --seq-len 64 --vocab-size 400"
#: a terminal wide enough that the summary's long lines are not wrapped (the pages show them whole)
WIDE = {"COLUMNS": "1000"}
#: lines longer than the README's column cut at "…"
CUT = "python -c \"import sys; [print(s if len(s) <= 130 else s[:129] + '…') for s in sys.stdin.read().splitlines()]\""
#: the time a run's write started (``.incomplete``), which no run repeats
STARTED = (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", "<time>")
#: a re-run of audit-run killed mid-write: lmleak's own writer opens the run (``.incomplete``, as
#: ``lmleak audit audit.yaml`` would) and the process dies before it closes it, as under SIGKILL
KILLED_RERUN = (
    "python -c \"import os, sys; sys.argv = ['lmleak', 'audit', 'audit.yaml']; from lmleak.runs import open_run; "
    "open_run('audit-run').__enter__(); os._exit(137)\""
)

# --- docs/verdict.md ---
#: a run's summary.json written by hand: one model's headline, straddling two limits
_SHARES = {"pii_people_members_n": 200, "pii_people_null": 3, "pii_people_null_n": 50}
INC_SUMMARY = json.dumps(
    {
        "provenance": {"model": {"backend": "http", "hash": "probe"}},  # a model behind an API: no files
        "models": {
            "m": {
                "headline": {
                    "mia_auc": 0.55,
                    "mia_auc_ci": [0.40, 0.70],
                    "mia_num_per_side": 40,
                    "mia_method": "perplexity",
                    "by_k": {
                        "1": {
                            "pii_people_excess": 0.0,
                            "pii_people_excess_ci": [-0.05, 0.04],
                            "pii_people_members": 12,
                            **_SHARES,
                        },
                        "3": {
                            "pii_people_excess": 0.04,
                            "pii_people_excess_ci": [-0.02, 0.10],
                            "pii_people_members": 20,
                            **_SHARES,
                        },
                    },
                }
            }
        },
    },
    indent=1,
)
#: tests/audit/test_release.py's run: a memorising fake model, subjects with a name and an e-mail only
MEMORIZER_YAML = """\
out: run
corpus: {path: data/corpus.jsonl}
models:
- {name: memorizer, path: 'fake:data/corpus.jsonl'}
analyses:
  report: {k: [1]}
  probe: {subjects: pairs.jsonl, level: triplet, templates: 1, beams: 1}
gate: {profile: release, max_exposure: 10}
"""
PAIRS = (
    "python -c \"import json; rows = [json.loads(x) for x in open('data/subjects.jsonl')]; "
    "open('pairs.jsonl', 'w').write(''.join(json.dumps({k: s[k] for k in "
    "('subject_id', 'user_id', 'name', 'email')}) + chr(10) for s in rows))\""
)

# --- docs/membership.md: members and non-members of a fake model (it knows corpus.jsonl's texts) ---
SPLIT = (
    "python -c \"import json; rows = [json.loads(x) for x in open('data/corpus.jsonl')]; "
    "users = sorted({r['user_id'] for r in rows})[:12]; "
    "open('corpus.jsonl', 'w').writelines(json.dumps(r) + chr(10) for r in rows if r['user_id'] in users); "
    "open('members.jsonl', 'w').writelines(json.dumps({'text': r['text']}) + chr(10) for r in rows if r['user_id'] in users); "
    "open('non.jsonl', 'w').writelines(json.dumps({'text': r['text']}) + chr(10) for r in rows if r['user_id'] not in users)\""
)
SUMMARY_KEYS = (
    "python -c \"import json; s = json.load(open('runs/mia/summary.json')); "
    "print(json.dumps({k: s[k] for k in ['redacted', 'mia_auc', 'bos_token_id']} | {'key': s['redaction']['key']}))\""
)

# --- docs/real-data.md ---
MAIL1 = "lmleak synth mail --out mail --scale 1 --canaries 5 --canary-repeats 10"
TEMPLATES = "lmleak probe templates --corpus mail/corpus.jsonl --subjects subjects.jsonl --out templates.yaml"

#: one byte of the model's weights changed after the audit (the last byte of its tensor data)
FLIP_BYTE = (
    "python -c \"p = 'model/model.safetensors'; b = bytearray(open(p, 'rb').read()); b[-1] ^= 1; "
    "open(p, 'wb').write(b)\""
)

EXAMPLES: tuple[Example, ...] = (
    # ---------------------------------------------------------------- fast: nothing is trained
    Example(
        "dp-audit-bound",
        "docs/dp-audit.md",
        (Cmd("lmleak dp-audit bound --m 1000 --r 100 --v 80 --delta 1e-5 --confidence 0.95"),),
    ),
    Example("dp-audit-plan", "docs/dp-audit.md", (Cmd("lmleak dp-audit plan --m 1000 --target-epsilon 4"),)),
    Example(
        "dp-audit-bound-fdp",
        "docs/dp-audit.md",
        (Cmd("lmleak dp-audit bound --m 1000 --r 1000 --v 900 --delta 1e-5"),),
    ),
    Example(
        "train-config-unknown-key",
        "docs/train.md",
        (Cmd("lmleak train --config train.yaml       # with `epoch: 3` in it", status=2),),
        files={"train.yaml": "corpus: data/corpus.jsonl\nout: model\nepoch: 3\n"},
    ),
    Example(
        "corpus-check-user-ids",
        "docs/security.md",
        (
            Cmd("lmleak corpus check six.jsonl"),
            Cmd("lmleak --user-ids strict corpus check six.jsonl", status=2),
        ),
        files={"six.jsonl": SIX},
    ),
    Example(
        "security-edited-corpus-gate",
        "docs/security.md",
        (
            Cmd("lmleak gate run --max-unique 100", status=2),
            Cmd("lmleak gate run --max-unique 100 --allow-changed", keep=r"^(warning|gate)"),
        ),
        setup=(
            "lmleak report --model fake:seen.jsonl --corpus corpus --out run --quiet",
            "echo 'Bob calls 555-0134 every night.' > corpus/bob/1.txt",
            "mkdir corpus/dee && echo 'Dee is new.' > corpus/dee/1.txt",
        ),
        files={
            "corpus/alice/1.txt": "Alice writes from alice@example.org today.\n",
            "corpus/bob/1.txt": "Bob calls 555-0134 every day.\n",
            "corpus/carol/1.txt": "Carol signs off as Carol.\n",
            # the model under audit: a fake one that memorised alice's and bob's documents
            "seen.jsonl": '{"user_id": "alice", "text": "Alice writes from alice@example.org today."}\n'
            '{"user_id": "bob", "text": "Bob calls 555-0134 every day."}\n',
        },
    ),
    Example(
        "mia-benchmark-wrong-folder",
        "docs/membership.md",
        (
            Cmd(
                "lmleak mia --model fake:corpus.jsonl --benchmark mimir --data data/x --out runs/mimir",
                status=2,
            ),
        ),
        files={"corpus.jsonl": '{"user_id": "u1", "text": "a b c"}\n', "data/x/members.jsonl": '"a b c"\n'},
    ),
    Example(
        "probe-deprecated-spelling",
        "docs/commands.md",
        (Cmd("lmleak -q probe --model fake:corpus.jsonl --subject me.json --json > me-findings.json"),),
        setup=(
            "lmleak synth customersim --out small --users 4 --dialogs-per-user 1 --seed 1 > /dev/null",
            "cp small/corpus.jsonl corpus.jsonl",
            ME,
        ),
    ),
    Example(
        "verdict-gate-inconclusive",
        "docs/verdict.md",
        (
            Cmd("lmleak gate inc --max-mia-auc 0.6 --max-pii-people-excess 0.05; echo $?"),
            Cmd(
                "lmleak gate inc --max-mia-auc 0.6 --max-pii-people-excess 0.05 --allow-inconclusive | tail -1"
            ),
        ),
        files={"inc/summary.json": INC_SUMMARY},
    ),
    Example(
        "verdict-not-evaluable",
        "docs/verdict.md",
        (
            Cmd("cat audit.yaml"),
            Cmd("lmleak audit audit.yaml", stop=r"^  memorizer · Membership"),
        ),
        setup=(
            "lmleak synth customersim --out data --users 6 --dialogs-per-user 2 --seed 3 > /dev/null",
            PAIRS,
        ),
        files={"audit.yaml": MEMORIZER_YAML},
    ),
    Example(
        "mia-redacted",
        "docs/membership.md",
        (
            Cmd(
                "lmleak mia --model fake:corpus.jsonl --members members.jsonl --non-members non.jsonl "
                "--out runs/mia --redact",
                output=False,
            ),
            Cmd("ls runs/mia"),
            Cmd(SUMMARY_KEYS),
        ),
        setup=(
            "lmleak synth customersim --out data --users 24 --dialogs-per-user 2 --seed 0 > /dev/null",
            SPLIT,
        ),
    ),
    Example(
        "probe-nulls",
        "docs/probing.md",
        (
            Cmd(
                "lmleak probe run --model fake:mail/corpus.jsonl --subjects subjects.jsonl --targets email \\\n"
                "    --level twin --templates 3 --template-file templates.yaml --out probe-run",
                keep=r"^(people probed|exact match, probed|made-up people \(|guess from the name|warning: \d+ of)",
            ),
        ),
        setup=(
            f"{MAIL} > /dev/null",
            "lmleak probe build --corpus mail/corpus.jsonl --out subjects.jsonl > /dev/null",
            "lmleak probe templates --corpus mail/corpus.jsonl --subjects subjects.jsonl --out templates.yaml > /dev/null",
        ),
        slow=True,  # three commands before it: ~20 s, kept out of the default suite
        env=WIDE,
    ),
    # docs/real-data.md: synth mail at scale 1 (about a million tokens), read but never trained on
    Example(
        "real-data-shapes",
        "docs/real-data.md",
        (
            Cmd(MAIL1, keep=r"^│ (documents|authors|tokens estimate|people: )"),
            Cmd(
                "lmleak probe build --corpus mail/corpus.jsonl --out subjects.jsonl",
                keep=r"^│ (subjects|subjects_per_shape|left_out) |^│ +│ ",
            ),
        ),
        group="mail-1",
        slow=True,  # a million-token corpus read four times: ~30 s, kept out of the default suite
    ),
    Example(
        "real-data-corpus-check",
        "docs/real-data.md",
        (Cmd("lmleak corpus check mail/corpus.jsonl"),),
        group="mail-1",
        slow=True,  # a million-token corpus read four times: ~30 s, kept out of the default suite
    ),
    Example(
        "real-data-templates",
        "docs/real-data.md",
        (Cmd(TEMPLATES),),
        group="mail-1",
        slow=True,  # a million-token corpus read four times: ~30 s, kept out of the default suite
    ),
    Example(
        "real-data-templates-nickname",
        "docs/real-data.md",
        (Cmd(TEMPLATES + " | grep -E '^│ email'", hidden=True),),
        group="mail-1",
        slow=True,  # a million-token corpus read four times: ~30 s, kept out of the default suite
        language="text",
    ),
    # ---------------------------------------------------------------- slow: a model is trained
    Example(
        "quick-audit-run",
        "docs/quick-audit.md",
        (
            Cmd(f"{MAIL} > /dev/null"),
            Cmd(
                f"lmleak -q train --corpus mail/corpus.jsonl --out model --holdout-users 0.3 \\\n    {GPT1}",
                output=False,
            ),
            Cmd(
                "lmleak audit --model model --corpus mail/corpus.jsonl --out audit-run",
                keep=(
                    r"^(report|mia|probe|exposure|config): |^model: verdict|^  people affected|^next:$"
                    r"|^│ model │ (People|Membership|PII|Leakage ε \(k=1\))|^  lmleak (gate|query) "
                ),
            ),
        ),
        group="quick-audit",
        slow=True,
        env=WIDE,
    ),
    Example(
        "readme-release-summary",
        "README.md",
        (
            Cmd(
                "lmleak audit --model model --corpus mail/corpus.jsonl --out audit-run 2>&1 | "
                f"sed -n '/: verdict /,/^└/p' | {CUT}",
                hidden=True,
            ),
        ),
        group="quick-audit",
        slow=True,
        env=WIDE,
        language="text",
    ),
    Example(
        "quick-audit-no-holdout",
        "docs/quick-audit.md",
        (
            Cmd(
                f"lmleak -q train --corpus mail/corpus.jsonl --out m0 {GPT1} --holdout-users 0 > /dev/null",
                hidden=True,
                output=False,
            ),
            Cmd(
                "lmleak audit --model m0 --corpus mail/corpus.jsonl --out r0 2>&1 | grep '^  not run: membership'",
                hidden=True,
            ),
        ),
        group="quick-audit",
        slow=True,
        env=WIDE,
        language="text",
    ),
    Example(
        "gate-changed-model",
        "docs/http.md",
        (
            Cmd(FLIP_BYTE, hidden=True, output=False),
            Cmd(
                "lmleak gate audit-run --max-unique 10; echo $?     # after one byte of model/model.safetensors changed"
            ),
        ),
        group="quick-audit",
        slow=True,
        subs=(FINGERPRINTS,),
    ),
    Example(
        "security-refusals",
        "docs/security.md",
        (
            Cmd("lmleak query audit-run \"SELECT * FROM read_csv('/etc/passwd')\"", status=2),
            Cmd(KILLED_RERUN, hidden=True, output=False, status=137),
            Cmd("lmleak gate audit-run --max-unique 0; echo $?     # after a re-run of audit-run was killed"),
        ),
        group="quick-audit",
        slow=True,
        subs=(STARTED,),
    ),
    Example(
        "selftest",
        "docs/selftest.md",
        (Cmd("lmleak selftest"),),
        slow=True,
        subs=(SECONDS,),
        tolerance=FLOAT32,
    ),
    Example(
        "dp-audit-run-reach",
        "docs/dp-audit.md",
        (Cmd(f"lmleak dp-audit run --corpus data/corpus.jsonl --out random {TINY}"),),
        setup=(DP_CORPUS,),
        group="dp-tiny",
        slow=True,
    ),
    Example(
        "dp-audit-run-crafted",
        "docs/dp-audit.md",
        (
            Cmd(
                f"lmleak dp-audit run --corpus data/corpus.jsonl --out crafted {TINY} \\\n    --canary-design crafted"
            ),
            Cmd(
                f"lmleak dp-audit run --corpus data/corpus.jsonl --out crafted-placebo {TINY} \\\n"
                "    --canary-design crafted --placebo"
            ),
        ),
        group="dp-tiny",
        slow=True,
    ),
    Example(
        "dp-audit-run-user",
        "docs/dp-audit.md",
        (
            Cmd(
                f"lmleak dp-audit run --corpus data/corpus.jsonl --out u-real {TINY} \\\n"
                "    --privacy-unit user --canary-documents 4"
            ),
            Cmd(
                f"lmleak dp-audit run --corpus data/corpus.jsonl --out u-placebo {TINY} \\\n"
                "    --privacy-unit user --canary-documents 4 --placebo"
            ),
        ),
        group="dp-tiny",
        slow=True,
    ),
    Example(
        "dp-audit-demo-recipes",
        "docs/dp-audit.md",
        (
            Cmd(DEMO_CORPUS, output=False),
            Cmd(f"lmleak dp-audit run --corpus data/corpus.jsonl --out audit-dp {DEMO_DP}"),
            Cmd(f"lmleak dp-audit run --corpus data/corpus.jsonl --out audit-nodp {DEMO_NODP}"),
        ),
        group="dp-demo",
        slow=True,
    ),
    Example(
        "dp-audit-gate",
        "docs/dp-audit.md",
        (
            Cmd("lmleak gate audit-dp --min-epsilon-lower-bound 0"),
            Cmd("lmleak gate audit-nodp --min-epsilon-lower-bound 2", status=1),
        ),
        group="dp-demo",
        slow=True,
    ),
    Example(
        "train-config-dp",
        "docs/train.md",
        (
            Cmd(
                "lmleak --quiet train --config train.yaml --epochs 2     # the command line's --epochs wins",
                keep=r"^(held out|tokenizer|DP:|    prv|warning:)",
            ),
        ),
        setup=("lmleak synth customersim --out data --users 30 --dialogs-per-user 4 --seed 3 --canaries 3",),
        files={
            "train.yaml": "corpus: data/corpus.jsonl\nout: model-dp\nmode: dp\ntarget-epsilon: 8\n"
            "privacy-unit: user\nepochs: 3\nlayers: 2\nwidth: 64\nheads: 2\nseq-len: 64\nholdout-users: 0.2\n"
        },
        slow=True,
        env=WIDE,
    ),
    Example(
        "user-dp-train",
        "docs/user-dp.md",
        (
            Cmd(
                "lmleak train --corpus mail/corpus.jsonl --out dp-user --mode dp --target-epsilon 8 \\\n"
                "    --batch-size 4 --epochs 3 --seq-len 64 --width 64",
                hidden=True,
                keep=r"^(tokenizer|DP:|    prv|warning:|re-audit)",
            ),
        ),
        setup=("lmleak synth mail --out mail --scale 0.05 --seed 0",),
        slow=True,
        env=WIDE,
        language="text",
    ),
    Example(
        "dp-audit-user-demo",
        "docs/dp-audit.md",
        (
            Cmd(
                f"lmleak dp-audit run --corpus data/corpus.jsonl --out audit-dp-user {DEMO_DP} \\\n"
                "    --privacy-unit user --canary-documents 4"
            ),
        ),
        group="dp-demo",
        slow=True,
    ),
    Example(
        "audit-in-python",
        "docs/api.md",
        (
            Cmd(
                "lmleak synth customersim --out data --users 30 --dialogs-per-user 4 --seed 3 --canaries 3",
                output=False,
            ),
            Cmd(
                "lmleak train --corpus data/corpus.jsonl --out model --epochs 4 --layers 2 --width 64 --heads 2 "
                "--seq-len 64 --holdout-users 0.2",
                output=False,
            ),
            Cmd("python examples/audit_in_python.py model data/corpus.jsonl audit-run"),
        ),
        setup=("mkdir examples && cp {root}/examples/audit_in_python.py examples/",),
        slow=True,
    ),
    Example(
        "probe-person",
        "docs/probing.md",
        (
            Cmd(
                "lmleak synth customersim --out small --users 10 --dialogs-per-user 2 --seed 1", output=False
            ),
            Cmd(
                "lmleak train --corpus small/corpus.jsonl --out mem --epochs 40 --batch-size 8 --lr 3e-3 \\\n"
                "    --vocab-size 1000 --holdout-users 0.2",
                output=False,
            ),
            Cmd(ME, hidden=True, output=False),
            Cmd("cat me.json     # user-0 of small/subjects.jsonl: a person the model learnt from"),
            Cmd("lmleak -q probe person --model mem --subject me.json --html me.html", output=False),
        ),
        group="probe-person",
        slow=True,
    ),
    Example(
        "probe-person-page",
        "docs/probing.md",
        (Cmd(PAGE_TEXT, hidden=True),),
        group="probe-person",
        slow=True,
        language="text",
    ),
)
