"""How a simulated response is written: the response shapes ("wrappers") and the format reason
each earns, the prose before the final object, and ``render``, which puts them together.
"""

from __future__ import annotations

import json

GOOD_WRAPPERS = (
    "bare",
    "prose",
    "think",
    "fenced_json",
    "fenced_plain",
    "pretty",
    "two_objects",
    "python_literal",
)
BAD_WRAPPERS = (
    "text_after",
    "fenced_then_text",
    "answer_tag",
    "comment",
    "not_mapping",
    "not_mapping_draft",
    "missing_keys",
    "extra_keys",
    "final_other_object",
    "no_object_prose",
    "atomic",
)
# what the format check says about each response shape (format 1 only for GOOD_WRAPPERS)
FORMAT_REASON = {
    "bare": "ok",
    "prose": "ok",
    "think": "ok",
    "fenced_json": "ok",
    "fenced_plain": "ok",
    "pretty": "ok",
    "two_objects": "ok",
    "python_literal": "ok_python_literal",
    "text_after": "text_after_object",
    "fenced_then_text": "text_after_object",
    "answer_tag": "text_after_object",
    "no_object_prose": "no_final_object",
    "atomic": "no_final_object",
    "comment": "not_json",
    "not_mapping": "not_a_mapping",
    "not_mapping_draft": "not_a_mapping",
    "missing_keys": "missing_keys",
    "extra_keys": "extra_keys",
    "final_other_object": "missing_keys",
}
# format-0 shapes from which the scorer still recovers both answer and annotation
RECOVERABLE_BAD = (
    "text_after",
    "fenced_then_text",
    "answer_tag",
    "not_mapping_draft",
    "extra_keys",
    "final_other_object",
)
ATOMIC_TYPES = ("integer", "number", "string", "option_letter", "boolean", "index_list")

GENERIC_SENTENCES = [
    "First, I look at the whole image to understand its layout.",
    "I will report coordinates in the pixel frame of the image as it was given to me.",
    "Let me scan the image again from left to right to make sure nothing is missed.",
    "The background is plain, so the objects stand out clearly.",
    "I need to be careful not to confuse neighbouring items that share a colour.",
    "Edges are slightly anti-aliased, so I estimate each boundary to the nearest pixel.",
    "Re-reading the question, it asks for exactly one final object at the end.",
    "There is no legend, so I rely on the colours and the printed labels directly.",
    "Counting a second time gives the same result, which is reassuring.",
    "The image is not rotated: x grows to the right and y grows downwards.",
    "Nothing in the corners looks relevant to the question.",
    "A thin grid in the background helps me estimate positions.",
    "I double-check each item by tracing its outline once more.",
    "The text is small, but it is still legible when I look closely.",
    "I should not include items that only partially match the description.",
    "Let me reconsider whether the item near the top edge should be counted.",
    "Comparing the left and right halves, the distribution is not symmetric.",
    "The labels are printed in a dark colour, which makes them easy to read.",
    "I will keep the order exactly as the question asks.",
    "Some items are close together, so I separate them by their outlines.",
    "To be safe, I verify the extreme values against the axis ticks.",
    "The spacing between items is roughly regular.",
    "I avoid guessing hidden items; only what is visible counts.",
    "It helps to think of the image as a grid of rows and columns.",
    "The title at the top tells me what the image is about.",
    "Checking against the question once more, I have everything I need.",
    "I'll note the approximate pixel positions as I go.",
    "The outline colour is a darker shade of the fill colour.",
    "Each element seems to be drawn without overlap.",
    "My estimate of the boundaries may be off by a pixel or two.",
]
OPENINGS = [
    "Let me work through this step by step.",
    "Okay, let me look at the image carefully.",
    "I'll start by describing what I see.",
    "Let's break the task down.",
    "First I need to find the relevant elements in the image.",
]
BEHAVIOUR_SENTENCES = {
    "normalized_01": "I will give the coordinates as fractions of the image width and height.",
    "scaled_1000": "Coordinates below are on the usual 0-1000 grid.",
    "missing_item": "I think I have found all of them now.",
    "extra_item": "There also seems to be one more matching item near the edge.",
}
TAILS = [
    "I am fairly confident in this answer.",
    "Let me know if you need more detail.",
    "(Coordinates are approximate.)",
    "Hope this helps!",
]


def applicable_wrappers(inst, wrappers):
    mode = inst["trace_output_mode"]
    out = []
    for w in wrappers:
        if w == "missing_keys" and mode != "answer_and_annotation":
            continue
        if w == "atomic" and inst["answer_gt"]["type"] not in ATOMIC_TYPES:
            continue
        out.append(w)
    return out


def answer_words(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k} {answer_words(v)}" for k, v in value.items())
    if isinstance(value, list):
        return (
            "; ".join(answer_words(v) for v in value)
            if value and isinstance(value[0], list)
            else ", ".join(str(v) for v in value)
        )
    return str(value)


def make_prose(inst, length, behaviour, answer, rng):
    if length == "none":
        return ""
    target = rng.randint(150, 420) if length == "short" else rng.randint(1000, 2000)
    pool = list(inst["meta"]["facts"]) + GENERIC_SENTENCES
    rng.shuffle(pool)
    sentences = [rng.choice(OPENINGS)]
    i = 0
    while sum(len(s) + 1 for s in sentences) < target:
        sentences.append(pool[i % len(pool)])
        i += 1
    if behaviour in BEHAVIOUR_SENTENCES:
        sentences.append(BEHAVIOUR_SENTENCES[behaviour])
    sentences.append(f"So the answer is {answer_words(answer)}.")
    paragraphs, cur = [], []
    for s in sentences:
        cur.append(s)
        if len(cur) >= rng.randint(3, 5):
            paragraphs.append(" ".join(cur))
            cur = []
    if cur:
        paragraphs.append(" ".join(cur))
    return "\n\n".join(paragraphs)


def json_obj(d, rng, style=None):
    style = style or rng.choice(("compact", "spaced", "spaced"))
    if style == "compact":
        return json.dumps(d, separators=(",", ":"), ensure_ascii=False)
    if style == "pretty":
        return json.dumps(d, indent=2, ensure_ascii=False)
    return json.dumps(d, ensure_ascii=False)


def atomic_text(value, rng):
    if isinstance(value, bool):
        return rng.choice(("true", "True") if value else ("false", "False"))
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def render(inst, wrapper, answer, annotation, prose, rng):
    """Return (response text, recovered mapping or None) for a wrapper.

    ``recovered`` is what the v0 scorer must find: the final object when it is a mapping with
    answer/annotation, otherwise the last such candidate; None when nothing is recoverable and the whole
    response is compared as the answer.
    """
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    final = {"answer": answer, "annotation": annotation} if aa else {"answer": answer}
    lead = prose + "\n\n" if prose else ""
    if wrapper == "bare":
        return lead + json_obj(final, rng), final
    if wrapper == "prose":
        return (prose or rng.choice(OPENINGS)) + "\n\n" + json_obj(final, rng), final
    if wrapper == "think":
        return "<think>\n" + (prose or rng.choice(OPENINGS)) + "\n</think>\n" + json_obj(final, rng), final
    if wrapper == "fenced_json":
        return lead + "```json\n" + json_obj(final, rng) + "\n```", final
    if wrapper == "fenced_plain":
        return lead + "```\n" + json_obj(final, rng) + "\n```\n", final
    if wrapper == "pretty":
        return lead + json_obj(final, rng, "pretty"), final
    if wrapper == "two_objects":
        draft = dict(final, answer=rng.choice(inst["meta"]["wrong"]))
        return (
            lead + "Draft: " + json_obj(draft, rng) + "\nWait, let me correct that.\n" + json_obj(final, rng),
            final,
        )
    if wrapper == "python_literal":
        return lead + repr(final), final
    if wrapper == "text_after":
        return lead + json_obj(final, rng) + "\n" + rng.choice(TAILS), final
    if wrapper == "fenced_then_text":
        return lead + "```json\n" + json_obj(final, rng) + "\n```\n" + rng.choice(TAILS), final
    if wrapper == "answer_tag":
        return lead + "<answer>" + json_obj(final, rng) + "</answer>", final
    if wrapper == "comment":
        body = json_obj(final, rng, rng.choice(("compact", "spaced")))
        return lead + body[:-1] + " // final answer\n}", None
    if wrapper == "not_mapping":
        items = [answer, annotation] if aa else [answer]
        return lead + "```json\n" + json.dumps(items, ensure_ascii=False) + "\n```", None
    if wrapper == "not_mapping_draft":
        items = [answer, annotation] if aa else [answer]
        return (
            lead
            + "My draft: "
            + json_obj(final, rng)
            + "\nSame thing as a list:\n```json\n"
            + json.dumps(items, ensure_ascii=False)
            + "\n```"
        ), final
    if wrapper == "missing_keys":
        return lead + json_obj({"answer": answer}, rng), {"answer": answer}
    if wrapper == "extra_keys":
        extra = dict(final)
        if not aa:
            extra["annotation"] = annotation
        extra["explanation"] = rng.choice(
            ("counted the visible items", "read from the image", "see reasoning above")
        )
        return lead + json_obj(extra, rng), extra
    if wrapper == "final_other_object":
        return lead + json_obj(final, rng) + "\n" + json.dumps(
            {"confidence": rng.choice((0.7, 0.8, 0.9))}
        ), final
    if wrapper == "no_object_prose":
        text = prose or f"{rng.choice(OPENINGS)} So the answer is {answer_words(answer)}."
        return text, None
    if wrapper == "atomic":
        return atomic_text(answer, rng), None
    raise ValueError(wrapper)
