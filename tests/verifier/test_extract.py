"""Finding the final object, the recovery candidates and the format verdict."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.verifier import JSON, MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION, PYTHON, Literal
from scoring.verifier import extraction as ex


def naive_close(text: str, start: int) -> int | None:
    """The spec's scan, character by character: string-aware depth counting from one '{'."""
    depth, inside, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if inside:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                inside = False
        elif char == '"':
            inside = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def naive_balanced_objects(text: str) -> list[tuple[int, int]]:
    spans, start = [], text.find("{")
    while start != -1:
        end = naive_close(text, start)
        if end is None:
            start = text.find("{", start + 1)
        else:
            spans.append((start, end + 1))
            start = text.find("{", end + 1)
    return spans


brace_soup = st.text(alphabet='{}"\\ab \n', max_size=60)


@settings(max_examples=600, deadline=None)
@given(brace_soup)
def test_one_pass_matcher_equals_the_scan_from_every_brace(text):
    close = ex._BraceMatcher(text).close
    for start in (i for i, c in enumerate(text) if c == "{"):
        assert close.get(start) == naive_close(text, start), (text, start)


@settings(max_examples=600, deadline=None)
@given(brace_soup)
def test_balanced_objects_follow_the_left_to_right_scan(text):
    assert [(s.start, s.end) for s in ex.balanced_objects(text)] == naive_balanced_objects(text)


@settings(max_examples=600, deadline=None)
@given(brace_soup)
def test_final_object_is_the_leftmost_brace_whose_scan_closes_at_the_end(text):
    final = ex.find_final_object(text)
    stripped = text.rstrip()
    closing = [s for s, c in enumerate(stripped) if c == "{" and naive_close(stripped, s) == len(stripped) - 1]
    if stripped.endswith("}") and closing:
        assert final is not None and final.kind == ex.BARE_OBJECT
        assert final.span.start == min(closing)
        assert final.span.end == len(stripped)
    elif not stripped.endswith("```"):
        assert final is None


def test_final_object_fast_path_and_general_path_agree_on_escaped_quotes():
    text = 'prose {"a": "{\\"", "b": 1}'
    assert ex.find_final_object(text).text == '{"a": "{\\"", "b": 1}'


@pytest.mark.parametrize(
    ("response", "kind", "content"),
    [
        ('Here:\n```python\nx = 1\n```\nthen\n```json\n{"answer": 7}\n```', ex.FENCED_BLOCK, '{"answer": 7}\n'),
        ('```python\n{"answer": 7}\n```', ex.FENCED_BLOCK, '{"answer": 7}\n'),
        ('```\n{"answer": "B"}\n```\n', ex.FENCED_BLOCK, '{"answer": "B"}\n'),
        ('```{"answer": 1}```', ex.FENCED_BLOCK, '{"answer": 1}'),
        ('The label reads "Total. {"answer": 7}', ex.BARE_OBJECT, '{"answer": 7}'),
        ('A stray } brace.\n{"answer": 1}  \n', ex.BARE_OBJECT, '{"answer": 1}'),
        ('{"answer": {"x": 1}}', ex.BARE_OBJECT, '{"answer": {"x": 1}}'),
    ],
)
def test_final_object_shapes(response, kind, content):
    final = ex.find_final_object(response)
    assert final.kind == kind
    assert final.text == content
    assert response[final.span.start : final.span.end] == content


@pytest.mark.parametrize("response", ["", "   ", "7", "Final:\n\"G\"", "```\n  \n```", "{\"answer\": 7", "```"])
def test_no_final_object(response):
    assert ex.find_final_object(response) is None


def test_candidates_keep_first_place_for_repeated_text():
    # Spec: a draft object, then a fenced block, then prose: the draft wins.
    response = 'Draft: {"answer": 3}\n```json\n{"answer": 7}\n```\nmore prose'
    found = ex.candidates(response)
    assert [(c.source, c.text.strip()) for c in found] == [
        (ex.SOURCE_FENCED_BLOCK, '{"answer": 7}'),
        (ex.SOURCE_EARLIER_OBJECT, '{"answer": 3}'),
        (ex.SOURCE_WHOLE_RESPONSE, response),
    ]
    extraction = ex.extract(response, MODE_ANSWER)
    assert extraction.recovered_source == ex.SOURCE_EARLIER_OBJECT
    assert extraction.recovered_mapping == {"answer": 3}
    assert extraction.recovered_text == '{"answer": 3}'


def test_tag_candidates_come_first_and_pair_left_to_right():
    response = "<answer>1</answer> x <answer>{\"answer\": 2}</answer><answer>unclosed"
    assert [response[s.start : s.end] for s in ex.answer_tags(response)] == ["1", '{"answer": 2}']


@pytest.mark.parametrize(
    ("response", "mode", "reason", "break_text"),
    [
        ('{"answer": 7}', MODE_ANSWER, ex.FORMAT_OK, None),
        ("{'answer': 7}", MODE_ANSWER, ex.FORMAT_PYTHON_LITERAL, None),
        ("", MODE_ANSWER, ex.FORMAT_EMPTY_RESPONSE, None),
        ("The answer is 7.", MODE_ANSWER, ex.FORMAT_NO_FINAL_OBJECT, ""),
        ("I think {maybe} it is 7.", MODE_ANSWER, ex.FORMAT_NO_FINAL_OBJECT, ""),
        ('{"answer": 7}\nI am fairly confident.', MODE_ANSWER, ex.FORMAT_TEXT_AFTER_OBJECT, "I am fairly confident."),
        ('```json\n{"answer": 7}\n```\nLet me know.', MODE_ANSWER, ex.FORMAT_TEXT_AFTER_OBJECT, "Let me know."),
        ("<answer>{\"answer\": 7}</answer>", MODE_ANSWER, ex.FORMAT_TEXT_AFTER_OBJECT, "</answer>"),
        ('{"answer": 7, // final\n}', MODE_ANSWER, ex.FORMAT_NOT_VALID_JSON, "// final\n}"),
        ("```json\n[1, 2]\n```", MODE_ANSWER, ex.FORMAT_NOT_A_MAPPING, "[1, 2]\n```"),
        ("{1, 2}", MODE_ANSWER, ex.FORMAT_NOT_A_MAPPING, "{1, 2}"),
        ('{"answer": 7}', MODE_ANSWER_AND_ANNOTATION, ex.FORMAT_MISSING_KEYS, '{"answer": 7}'),
        ('{"answer": 7, "explanation": "x"}', MODE_ANSWER, ex.FORMAT_EXTRA_KEYS, '{"answer": 7, "explanation": "x"}'),
        ('{"answer": 7, "annotation": [1, 2]}', MODE_ANSWER, ex.FORMAT_EXTRA_KEYS, '{"answer": 7, "annotation": [1, 2]}'),
    ],
)
def test_format_reasons_and_where_the_format_broke(response, mode, reason, break_text):
    extraction = ex.extract(response, mode)
    assert extraction.format_reason == reason
    assert extraction.schema_ok == (reason in (ex.FORMAT_OK, ex.FORMAT_PYTHON_LITERAL))
    if break_text is None:
        assert extraction.format_break_at is None
    else:
        assert response[extraction.format_break_at :] == break_text
    if reason != ex.FORMAT_OK:
        assert extraction.format_detail


def test_missing_and_extra_keys_are_named():
    extraction = ex.extract('{"result": 1}', MODE_ANSWER_AND_ANNOTATION)
    assert extraction.missing_keys == ("annotation", "answer")
    assert extraction.extra_keys == ("result",)
    assert "missing key(s)" in extraction.format_detail and "result" in extraction.format_detail


def test_nested_answer_is_not_recovered():
    extraction = ex.extract('{"result": {"final": {"answer": "Nuclear"}}}', MODE_ANSWER)
    assert extraction.structure_ok and extraction.json_ok and not extraction.schema_ok
    assert extraction.recovered_mapping is None
    assert extraction.recovered_source == ex.SOURCE_NOTHING


def test_final_object_without_content_falls_back_to_an_earlier_object():
    response = 'x\n{"answer":64,"annotation":[[342,265,825,420]]}\n{"confidence": 0.8}'
    extraction = ex.extract(response, MODE_ANSWER_AND_ANNOTATION)
    assert extraction.format_reason == ex.FORMAT_MISSING_KEYS
    assert extraction.recovered_source == ex.SOURCE_EARLIER_OBJECT
    assert extraction.recovered_mapping["answer"] == 64


def test_whole_response_is_a_candidate():
    response = "{'answer': 3} "
    assert ex.extract(response, MODE_ANSWER).recovered_source == ex.SOURCE_FINAL_OBJECT
    extraction = ex.extract("  {'answer': 3, }\t", MODE_ANSWER)
    assert extraction.format_reason == ex.FORMAT_PYTHON_LITERAL


schema_keys = st.sets(
    st.one_of(st.sampled_from(["answer", "annotation", "result", "Answer", ""]), st.integers(-2, 2)),
    max_size=5,
)


@given(schema_keys, st.sampled_from([MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION]), st.booleans())
def test_schema_reason_is_the_verdict_of_the_missing_and_extra_keys(keys, mode, parsed_as_json):
    """The spec's rule from the key lists: missing keys first, then extra ones (non-string keys
    count as extra); the batch engine's other-mode verdict is ``schema_reason`` alone."""
    final_parse = Literal(dict.fromkeys(keys, 0), JSON if parsed_as_json else PYTHON)
    required = {"answer"} if mode == MODE_ANSWER else {"answer", "annotation"}
    string_keys = {k for k in keys if isinstance(k, str)}
    missing, extra = sorted(required - string_keys), sorted(string_keys - required)
    extra += [repr(k) for k in keys if not isinstance(k, str)]
    if missing:
        expected = (False, ex.FORMAT_MISSING_KEYS)
    elif extra:
        expected = (False, ex.FORMAT_EXTRA_KEYS)
    else:
        expected = (True, ex.FORMAT_OK if parsed_as_json else ex.FORMAT_PYTHON_LITERAL)
    assert ex.schema_reason(final_parse, mode) == expected
    ok, reason, missing_keys, extra_keys = ex.schema_verdict(final_parse, mode)
    assert (ok, reason) == expected
    assert list(missing_keys) == missing and sorted(extra_keys) == sorted(extra)


@pytest.mark.parametrize(
    ("response", "culprit"),
    [
        ('<answer>{"answer": 7}</answer>', "</answer>"),
        ('<answer>\n{"answer": 7}\n</answer>\n', "</answer>"),
        ('Sure.\n<answer>{"answer": 7}</answer> Thanks!', "</answer> Thanks!"),
        ('```json {"answer": 7}```\n\nHope this helps.', "Hope this helps."),
        ('{"answer": 7}   \t see above', "see above"),
        ('{"answer": 7} <answer>', "<answer>"),
    ],
)
def test_text_after_the_object_is_named_and_the_caret_is_on_it(response, culprit):
    """Issue #20: the reason names what follows the last object (for a tag, its closing tag) and
    the break position is that text's first character, never past the end."""
    extraction = ex.extract(response, MODE_ANSWER)
    assert extraction.format_reason == ex.FORMAT_TEXT_AFTER_OBJECT
    assert extraction.format_detail == f"text after the last object: {culprit!r}"
    assert response[extraction.format_break_at :].rstrip() == culprit
    assert extraction.format_break_at < len(response.rstrip())


def test_an_empty_final_fenced_block_is_no_final_object():
    extraction = ex.extract('Draft: {"answer": 7}\n```json\n```', MODE_ANSWER)
    assert extraction.format_reason == ex.FORMAT_NO_FINAL_OBJECT
    assert extraction.format_detail == "the final fenced block is empty"
    assert extraction.recovered_mapping == {"answer": 7}
