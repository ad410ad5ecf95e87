"""GSM8K-style rows for the simple scorers (``gsm8k_rollouts.jsonl``): word problems with worked
``<<a*b=c>>`` gold solutions, and model outputs ending in different answer styles.
"""

from __future__ import annotations

from .common import RUNS, rng_for

NAMES = [
    "Natalia",
    "Weng",
    "Betty",
    "Julie",
    "James",
    "Albert",
    "Ken",
    "Alexis",
    "Tina",
    "Mark",
    "Carla",
    "Joy",
]


def gsm8k_problem(idx):
    rng = rng_for("gsm8k", idx)
    name = rng.choice(NAMES)
    kind = idx % 10
    if kind == 0:
        a, p = rng.randint(12, 60), rng.randint(2, 6)
        q = (
            f"{name} sells {a} cupcakes on Monday and twice as many on Tuesday. Each cupcake costs ${p}. "
            f"How much money does {name} make in total?"
        )
        steps = [
            (f"On Tuesday {name} sells {a}*2", f"{a}*2", a * 2),
            (f"In total {name} sells {a}+{a * 2}", f"{a}+{a * 2}", a * 3),
            (f"{name} makes {a * 3}*{p}", f"{a * 3}*{p}", a * 3 * p),
        ]
    elif kind == 1:
        c, s, f = rng.randint(8, 30), rng.randint(20, 35), rng.randint(5, 40)
        q = f"A school has {c} classrooms with {s} students each. If {f} students are absent, how many students are present?"
        steps = [
            (f"The school has {c}*{s}", f"{c}*{s}", c * s),
            (f"Present students are {c * s}-{f}", f"{c * s}-{f}", c * s - f),
        ]
    elif kind == 2:
        p, d, q2, e = rng.randint(10, 40), rng.randint(3, 9), rng.randint(20, 60), rng.randint(2, 6)
        q = (
            f"{name} reads {p} pages a day for {d} days and then {q2} pages a day for {e} days. "
            f"How many pages does {name} read in total?"
        )
        steps = [
            (f"First {name} reads {p}*{d}", f"{p}*{d}", p * d),
            (f"Then {name} reads {q2}*{e}", f"{q2}*{e}", q2 * e),
            (f"Altogether {p * d}+{q2 * e}", f"{p * d}+{q2 * e}", p * d + q2 * e),
        ]
    elif kind == 3:
        a, h, d = rng.randint(40, 150), rng.randint(8, 16), rng.randint(5, 12)
        q = f"A factory produces {a} widgets per hour and runs {h} hours a day. How many widgets does it make in {d} days?"
        steps = [
            (f"Each day it makes {a}*{h}", f"{a}*{h}", a * h),
            (f"In {d} days it makes {a * h}*{d}", f"{a * h}*{d}", a * h * d),
        ]
    elif kind == 4:
        n, b = rng.randint(3, 9), rng.randint(7, 25)
        m = n * b + rng.randint(15, 400)
        q = f"{name} has ${m}. She buys {n} books at ${b} each. How much money does she have left?"
        steps = [
            (f"The books cost {n}*{b}", f"{n}*{b}", n * b),
            (f"She has {m}-{n * b}", f"{m}-{n * b}", m - n * b),
        ]
    elif kind == 5:
        v, t = rng.randint(45, 90), rng.randint(3, 14)
        q = f"A train travels at {v} miles per hour for {t} hours. How many miles does it travel?"
        steps = [(f"The train travels {v}*{t}", f"{v}*{t}", v * t)]
    elif kind == 6:
        r, c, k = rng.randint(10, 40), rng.randint(12, 30), rng.randint(3, 25)
        q = f"There are {r} rows of {c} chairs in a hall. {k} chairs are broken. How many chairs can be used?"
        steps = [
            (f"There are {r}*{c}", f"{r}*{c}", r * c),
            (f"Usable chairs are {r * c}-{k}", f"{r * c}-{k}", r * c - k),
        ]
    elif kind == 7:
        w, n = rng.randint(35, 120), rng.randint(20, 52)
        q = f"{name} saves ${w} every week. How much has {name} saved after {n} weeks?"
        steps = [(f"{name} saves {w}*{n}", f"{w}*{n}", w * n)]
    elif kind == 8:
        a, b = rng.randint(5, 40), rng.randint(3, 25)
        q = f"A farmer has {a} chickens and {b} cows. How many legs do the animals have in total?"
        steps = [
            (f"The chickens have {a}*2", f"{a}*2", a * 2),
            (f"The cows have {b}*4", f"{b}*4", b * 4),
            (f"In total {a * 2}+{b * 4}", f"{a * 2}+{b * 4}", a * 2 + b * 4),
        ]
    else:
        s, n, e = rng.choice((8, 10, 12)) * 3, rng.randint(3, 6), rng.randint(2, 4)
        q = f"Three pizzas are each cut into {s // 3} slices. {n} friends each eat {e} slices. How many slices are left?"
        steps = [
            (f"There are 3*{s // 3}", f"3*{s // 3}", s),
            (f"The friends eat {n}*{e}", f"{n}*{e}", n * e),
            (f"Left over {s}-{n * e}", f"{s}-{n * e}", s - n * e),
        ]
    answer = steps[-1][2]
    gold = "\n".join(f"{text} = <<{expr}={val}>>{val}." for text, expr, val in steps) + f"\n#### {answer}"
    return q, steps, answer, gold


GSM_STYLES_RIGHT = (
    "sentence_period",
    "hashes",
    "dollar_commas",
    "final_answer_commas",
    "boxed",
    "decimal_zeros",
)
GSM_STYLES_WRONG = ("arithmetic_slip", "trailing_number_trap", "partial_result")


def gsm8k_rows():
    rows, plans = [], {}
    for run in RUNS:
        for step in (100, 200):
            for idx in range(25):
                q, steps, ans, gold = gsm8k_problem(idx)
                rng = rng_for("gsm8k-row", run, step, idx)
                p_right = {
                    ("ckpt-A", 100): 0.55,
                    ("ckpt-A", 200): 0.7,
                    ("ckpt-B", 100): 0.75,
                    ("ckpt-B", 200): 0.85,
                }
                right = rng.random() < p_right[(run, step)]
                style = rng.choice(GSM_STYLES_RIGHT if right else GSM_STYLES_WRONG)
                work = "\n".join(f"{t} = {v}." for t, _, v in steps[:-1])
                last_t, _, last_v = steps[-1]
                reported = ans
                if style == "arithmetic_slip":
                    reported = ans + rng.choice((-10, -2, -1, 1, 3, 12))
                elif style == "partial_result":
                    reported = steps[-2][2] if len(steps) > 1 else ans * 2
                shown = f"{last_t} = {reported}." if style != "partial_result" else ""
                body = (work + "\n" + shown).strip()
                money = "$" if "$" in q else ""
                # models often group thousands and add the currency sign in sentence answers
                said = (
                    f"{money if rng.random() < 0.5 else ''}{reported:,}"
                    if abs(reported) >= 1000
                    else str(reported)
                )
                tail = {
                    "sentence_period": f"The answer is {said}.",
                    "hashes": f"#### {reported}",
                    "dollar_commas": f"So the total is {money}{reported:,}.",
                    "final_answer_commas": f"Final answer: {reported:,}",
                    "boxed": f"\\boxed{{{reported}}}",
                    "decimal_zeros": f"That comes to {reported:,}.00{' dollars' if money else ''}.",
                    "arithmetic_slip": f"The answer is {said}.",
                    "trailing_number_trap": f"The answer is {said} (I checked it in 2 ways).",
                    "partial_result": f"So the answer is {said}.",
                }[style]
                output = f"{body}\n{tail}" if body else tail
                rid = f"gsm8k/{run}/step-{step}/{idx:03d}"
                rows.append(
                    {
                        "id": rid,
                        "task_id": f"gsm8k-train-{idx:04d}",
                        "run": run,
                        "step": step,
                        "prompt": q,
                        "output": output,
                        "gold": gold,
                    }
                )
                plans[rid] = {
                    "style": style,
                    "model_correct": reported == ans,
                    "last_number_correct": reported == ans and style != "trailing_number_trap",
                    "answer": ans,
                }
    return rows, plans
