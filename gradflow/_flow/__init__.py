"""Gradient flows: the options as values — solver, step-size controller, stop rule
(``options``) —, one trajectory (``integrate``), batches of trajectories (``batched``), the
adaptive integrators of gradflow's own, explicit pairs (``rk``) and a Rosenbrock method for stiff
flows (``rosenbrock``), the Newton endpoint of a stalled flow (``newton_finish``), plain descent
(``descent``), the flow that slides along kinks (``sliding``; its device programs and the
geometry of the surfaces in ``sliding_steps``), where a run stalled on a kink ends
(``kink_settle``), runs integrated again where they overshot a surface on which the Hessian
jumps (``overshoot``), the evidence of where a flow ended (``verdict``) and what one
trajectory reached (``reached``), the two entry points, one trajectory and a batch (``flows``),
and a batch's programs made ahead (``prepare``).
"""
