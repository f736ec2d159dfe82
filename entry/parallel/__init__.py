"""The parallel pipeline: collectors and the evaluator as Ray actors (workers), the learner in the driver."""
