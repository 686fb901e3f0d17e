"""The built-in task families."""

from __future__ import annotations

from ..registry import TaskSpec


def builtin_tasks() -> list[TaskSpec]:
    from .agent import AgentTask
    from .conversation import ConversationTask
    from .entity import EntityTask
    from .extraction import ExtractionTask
    from .grounding import GroundingTask
    from .qa import QATask
    from .text_analysis import TextTask
    from .translation import TranslationTask

    return [QATask(), EntityTask(), TextTask(), TranslationTask(), AgentTask(),
            ConversationTask(), ExtractionTask(), GroundingTask()]
