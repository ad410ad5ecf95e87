"""The trace verifier inside training: reward functions for verl and TRL.

When training is rewarded by the very verifier the dashboard rescores with, "logged vs recomputed"
matches by construction, and the dashboard explains exactly what the trainer rewarded. Each adapter
reads what its framework passes as the batch scorer reads that framework's dumps, and scores it as
``rolloutscope score`` does, to the last bit (``docs/training.md``):

- :mod:`scoring.integrations.verl` -- ``compute_score(data_source, solution_str, ground_truth,
  extra_info=None, **reward_kwargs)``, and its batch form ``compute_score(data_sources=,
  solution_strs=, ground_truths=, extra_infos=)``, for ``custom_reward_function``. Returns a dict:
  ``score`` and the components verl logs beside it (``acc``, ``answer_reward``,
  ``annotation_reward``, ``format``).
- :mod:`scoring.integrations.trl` -- ``trace_reward`` (the overall score) and ``answer_reward``,
  ``annotation_reward``, ``format_reward`` for ``GRPOTrainer(reward_funcs=[...])``, reading ground
  truth from the dataset's columns; ``TraceRewards(**options)`` makes them with other options.
- :mod:`scoring.integrations.training_rows` -- what both share: one row read and scored under the
  batch scorer's options.

Neither framework is imported: the adapters take what the frameworks pass. Nothing is imported
here either, so loading one adapter does not load the other.
"""
