"""A fine-tune's own tasks, read as data from its folder, for the package's manifest.

Florence-2's processor maps a task token to a prompt in two dictionaries
(task_prompts_without_inputs, task_prompts_with_input, the latter with "{input}") and to an
answer post-processing in a third (tasks_answer_post_processing_type). Fine-tunes such as
PromptGen add their tokens to these dictionaries in their own processing_florence2.py. That
file is Python: it is parsed with the ast module and only dictionary literals assigned to those
names are read (ast.literal_eval), so nothing in it runs; a file without such literals is
ignored with a note. processor_config.json and tokenizer_config.json may carry the same three
tables as JSON.

The manifest lists the tasks the standard 15 do not have: token, readable name, prompt, whether
it takes text, and the post-processing.
"""
import ast
import json
import os
import re
from typing import Dict, List, Tuple

from . import files

TABLES = ("task_prompts_without_inputs", "task_prompts_with_input",
          "tasks_answer_post_processing_type")
# The original processor's 15 tasks (engine/text/Tasks.cpp), which every package offers.
STANDARD = {"<OCR>", "<OCR_WITH_REGION>", "<CAPTION>", "<DETAILED_CAPTION>",
            "<MORE_DETAILED_CAPTION>", "<OD>", "<DENSE_REGION_CAPTION>",
            "<CAPTION_TO_PHRASE_GROUNDING>", "<REFERRING_EXPRESSION_SEGMENTATION>",
            "<REGION_TO_SEGMENTATION>", "<OPEN_VOCABULARY_DETECTION>", "<REGION_TO_CATEGORY>",
            "<REGION_TO_DESCRIPTION>", "<REGION_TO_OCR>", "<REGION_PROPOSAL>"}
ANSWER_TYPES = ("pure_text", "description_with_bboxes", "bboxes", "ocr", "phrase_grounding",
                "polygons", "description_with_bboxes_or_polygons")
TOKEN = re.compile(r"<[A-Za-z0-9_]{1,64}>")
MAX_SOURCE_BYTES = 1 << 20  # processing_florence2.py is some 50 KB
MAX_TASKS = 256
MAX_PROMPT_CHARS = 1000


def literal_tables(source: str) -> Dict[str, dict]:
    """The three tables wherever a dictionary literal is assigned to them (a plain name or an
    attribute such as self.task_prompts_without_inputs); later assignments extend earlier."""
    found: Dict[str, dict] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not isinstance(value, ast.Dict):
            continue
        for target in targets:
            name = (target.id if isinstance(target, ast.Name) else
                    target.attr if isinstance(target, ast.Attribute) else None)
            if name in TABLES:
                try:
                    table = ast.literal_eval(value)
                except ValueError:
                    continue  # a dictionary with computed entries: not data
                found.setdefault(name, {}).update(table)
    return found


def python_tables(path: str, notes: List[str]) -> Dict[str, dict]:
    try:
        source = files.read_bytes(path, MAX_SOURCE_BYTES).decode("utf-8")
        tables = literal_tables(source)
    except files.FileError as e:
        notes.append(f"{e}: ignored")
        return {}
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError,
            MemoryError) as e:
        notes.append(f"{path}: ignored, not readable as Python source ({type(e).__name__})")
        return {}
    if not tables:
        notes.append(f"{path}: ignored, it assigns no task table as a dictionary literal")
    return tables


def json_tables(path: str, notes: List[str]) -> Dict[str, dict]:
    try:
        data = json.loads(files.read_bytes(path, MAX_SOURCE_BYTES))
    except files.FileError as e:
        notes.append(f"{e}: ignored")
        return {}
    except (OSError, ValueError, RecursionError) as e:
        notes.append(f"{path}: ignored, not readable as JSON ({type(e).__name__})")
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: data[name] for name in TABLES if isinstance(data.get(name), dict)}


def readable_name(token: str) -> str:
    """"<MIXED_CAPTION_PLUS>" -> "Mixed caption plus"; a token in mixed case keeps its case
    ("<DocVQA>" -> "DocVQA")."""
    text = token.strip("<>").replace("_", " ").strip()
    if not text:
        return token
    return text.lower().capitalize() if text.upper() == text else text


def task_entries(tables: Dict[str, dict], notes: List[str]) -> List[dict]:
    without = tables.get("task_prompts_without_inputs", {})
    with_input = tables.get("task_prompts_with_input", {})
    answers = tables.get("tasks_answer_post_processing_type", {})
    tokens = [t for t in list(without) + list(with_input) + list(answers)
              if isinstance(t, str) and t not in STANDARD]
    entries, seen = [], set()
    for token in tokens:
        if token in seen:
            continue
        seen.add(token)
        if not TOKEN.fullmatch(token):
            notes.append(f"task {token[:80]!r} ignored: not a task token like <NAME>")
            continue
        prompt = with_input.get(token, without.get(token, token))
        answer = answers.get(token, "pure_text")
        if not isinstance(prompt, str) or not prompt or len(prompt) > MAX_PROMPT_CHARS:
            notes.append(f"task {token} ignored: its prompt is not a text of 1 to "
                         f"{MAX_PROMPT_CHARS} characters")
            continue
        if answer not in ANSWER_TYPES:
            notes.append(f"task {token}: post-processing {str(answer)[:80]!r} unknown, its "
                         "answer is shown as text")
            answer = "pure_text"
        takes_text = "{input}" in prompt
        entries.append({"token": token, "name": readable_name(token), "prompt": prompt,
                        "input": "text" if takes_text else "none", "answer": answer})
        if len(entries) == MAX_TASKS:
            notes.append(f"only the first {MAX_TASKS} tasks are kept")
            break
    return entries


def folder_tasks(folder: str) -> Tuple[List[dict], List[str]]:
    """The tasks a checkpoint folder adds to the standard 15, and notes on what was ignored."""
    notes: List[str] = []
    tables: Dict[str, dict] = {}
    for name, reader in (("processing_florence2.py", python_tables),
                         ("processor_config.json", json_tables),
                         ("tokenizer_config.json", json_tables)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        for table, entries in reader(path, notes).items():
            tables.setdefault(table, {}).update(entries)
    return task_entries(tables, notes), notes
