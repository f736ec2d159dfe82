"""SAC on Pendulum-v1 with gravity rising through three lessons (ML-Agents' ``environment_parameters``).

Gravity ``g`` (a ``gymnasium.make`` keyword of Pendulum) starts at 8, moves to 9 and then to Pendulum's own 10 once
the mean return of the lesson's last 10 training episodes (smoothed as ML-Agents does) passes -400. Each env is made
with the new gravity at its next episode; the evaluations use the current lesson's, and the stop value (-250)
counts from the last lesson on. ``tensorboard`` shows ``curriculum/g/lesson``.

Expected: -250 at full gravity by 41k / 37k / 35k env steps (seeds 0-2; the lessons move at 30k / 26k / 28k and
32k / 28k / 30k), where the zoo's plain Pendulum config takes 32k / 34k / 30k: Pendulum needs no curriculum, this
config shows the mechanism (2-core Intel Xeon; ``ding_lite -m serial -c
dizoo_configs/pendulum_gravity_curriculum_sac_config.py -s N``; BENCHMARKS.md, "Curricula").
"""
from easydict import EasyDict

from dizoo_configs.pendulum_sac_config import main_config as pendulum

lesson = dict(measure='reward', behavior='pendulum', threshold=-400, min_lesson_length=10, signal_smoothing=True)
pendulum_gravity_curriculum_sac_config = dict(
    pendulum,
    exp_name='pendulum_gravity_curriculum_sac_seed0',
    env=dict(
        pendulum.env,
        environment_parameters=dict(g=dict(curriculum=[
            dict(name='low', value=8.0, completion_criteria=lesson),
            dict(name='middle', value=9.0, completion_criteria=lesson),
            dict(name='full', value=10.0),
        ])),
        environment_parameters_via='make',
    ),
)
main_config = EasyDict(pendulum_gravity_curriculum_sac_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_gravity_curriculum_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
