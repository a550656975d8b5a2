"""Environments (generative processes) and the agents' models of them: T-maze, grid world, foraging.

Every environment is a `CategoricalEnv`: true A, B, D tensors (the shapes of `model.py`) sampled from,
pure functions `reset(key, trial) -> (state [F], obs [M])` and `step(key, state, action) ->
(state, obs)`, and a pytree, so a population of environments is `jax.vmap`-ed like the agents. A
`context` schedule fixes one factor at each trial's reset (the foraging task's rich patch, which
changes between blocks of trials).

    T-maze (pymdp's `BaseTMaze` with 4 fully connected locations and a separate cue modality):
      factors  location {centre, left, right, cue} (4 controls: go there), reward side {left, right}
      outcomes location (4), reward {none, reward, punishment}, cue {none, left, right}
      C        reward +2, punishment -3 (the pymdp demo's); the agent starts at the centre.
    Grid world: n x n cells, 5 controls (up, right, down, left, stay; walls keep you in place),
      location observed through a noisy identity A (correct with 1 - noise, else uniform).
    Foraging: a home and K patches; one patch is rich (food with p_rich, the others p_poor), and
      which one changes every block of trials. Each trial: observe home, choose a patch, observe food.
      The agent models the location only; what food each patch gives is its A, to be learned.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxml.papers.embodied.model import GenerativeModel, generative_model

CENTRE, LEFT, RIGHT, CUE = 0, 1, 2, 3
NO_OUTCOME, REWARD, PUNISHMENT = 0, 1, 2
GRID_ACTIONS = ("up", "right", "down", "left", "stay")
HOME = 0
NO_FOOD, FOOD = 0, 1


def _sample_each(key, probs):
    """One index from each of the categorical vectors `probs` by inverse CDF with one uniform draw per
    vector: a single counter-based RNG call per step instead of one per factor and modality (the
    threefry calls were the largest op count of a T-maze step)."""
    u = jax.random.uniform(key, (len(probs),))
    return jnp.stack([jnp.minimum(jnp.sum(jnp.cumsum(p) <= u[i] * p.sum()), p.shape[0] - 1)
                      for i, p in enumerate(probs)]).astype(jnp.int32)


@struct.dataclass
class CategoricalEnv:
    """A generative process with the tensors of `model.py`; see the module docstring."""

    A: tuple
    B: tuple
    D: tuple
    context: jax.Array | None = None
    a_deps: tuple = struct.field(pytree_node=False, default=())
    b_deps: tuple = struct.field(pytree_node=False, default=())
    context_factor: int = struct.field(pytree_node=False, default=-1)
    trials_per_block: int = struct.field(pytree_node=False, default=1)

    def observe(self, key, state):
        return _sample_each(key, [a[(slice(None),) + tuple(state[j] for j in deps)]
                                  for a, deps in zip(self.A, self.a_deps)])

    def reset(self, key, trial=0):
        """The first state and outcome of trial `trial` (int; selects the context block)."""
        k_state, k_obs = jax.random.split(key)
        state = _sample_each(k_state, list(self.D))
        if self.context is not None:
            block = jnp.minimum(trial // self.trials_per_block, self.context.shape[0] - 1)
            state = state.at[self.context_factor].set(self.context[block])
        return state, self.observe(k_obs, state)

    def step(self, key, state, action):
        """The next state under joint action `action` `[F]` and its outcome."""
        k_state, k_obs = jax.random.split(key)
        state = _sample_each(k_state, [b[(slice(None),) + tuple(state[j] for j in deps) + (action[f],)]
                                       for f, (b, deps) in enumerate(zip(self.B, self.b_deps))])
        return state, self.observe(k_obs, state)


def _env(A, B, D, a_deps, b_deps, **kw) -> CategoricalEnv:
    as32 = lambda xs: tuple(jnp.asarray(x, jnp.float32) for x in xs)
    return CategoricalEnv(A=as32(A), B=as32(B), D=as32(D), a_deps=tuple(map(tuple, a_deps)),
                          b_deps=tuple(map(tuple, b_deps)), **kw)


# ---- T-maze ---------------------------------------------------------------------------------------------

def tmaze_arrays(cue_validity: float = 0.95, reward_probability: float = 1.0,
                 punishment_probability: float = 1.0):
    """(A, B, D, a_deps, b_deps) of the T-maze, as numpy arrays (equal to pymdp's `BaseTMaze` with
    num_locations=4, cue_mode='separate', connectivity='fully_connected', has_middle=False)."""
    for name, p in (("cue_validity", cue_validity), ("reward_probability", reward_probability),
                    ("punishment_probability", punishment_probability)):
        if not 0 <= p <= 1:
            raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
    A_loc = np.eye(4)
    A_rew = np.zeros((3, 4, 2))
    A_cue = np.zeros((3, 4, 2))
    for side in range(2):
        for loc in (CENTRE, CUE):
            A_rew[NO_OUTCOME, loc, side] = 1.0
        A_cue[NO_OUTCOME, [CENTRE, LEFT, RIGHT], side] = 1.0
        A_cue[1 + side, CUE, side] = cue_validity
        A_cue[2 - side, CUE, side] = 1.0 - cue_validity
        good, bad = LEFT + side, RIGHT - side
        A_rew[REWARD, good, side] = reward_probability
        A_rew[NO_OUTCOME, good, side] = 1.0 - reward_probability
        A_rew[PUNISHMENT, bad, side] = punishment_probability
        A_rew[NO_OUTCOME, bad, side] = 1.0 - punishment_probability
    B_loc = np.zeros((4, 4, 4))
    for u in range(4):
        B_loc[u, :, u] = 1.0
    B_side = np.eye(2)[:, :, None]
    D = [np.eye(4)[CENTRE], np.full(2, 0.5)]
    return [A_loc, A_rew, A_cue], [B_loc, B_side], D, [[0], [0, 1], [0, 1]], [[0], [1]]


def tmaze_env(cue_validity: float = 0.95, reward_probability: float = 1.0,
              punishment_probability: float = 1.0) -> CategoricalEnv:
    """The T-maze process; the reward side is drawn uniformly at each trial's reset."""
    A, B, D, a_deps, b_deps = tmaze_arrays(cue_validity, reward_probability, punishment_probability)
    return _env(A, B, D, a_deps, b_deps)


def tmaze_model(cue_validity: float = 0.95, reward_probability: float = 1.0, punishment_probability: float = 1.0,
                reward: float = 2.0, punishment: float = -3.0, policy_len: int = 1) -> GenerativeModel:
    """The agent's T-maze model: the process's A, B, D and preferences C[reward] = (0, reward, punishment)."""
    A, B, D, a_deps, b_deps = tmaze_arrays(cue_validity, reward_probability, punishment_probability)
    C = [np.zeros(4), np.array([0.0, reward, punishment]), np.zeros(3)]
    return generative_model(A, B, C, D, a_deps=a_deps, b_deps=b_deps, policy_len=policy_len)


# ---- grid world -----------------------------------------------------------------------------------------

def grid_transitions(n: int) -> np.ndarray:
    """B `[n*n, n*n, 5]`: deterministic moves (up, right, down, left, stay); a wall keeps the agent in place."""
    if n < 2:
        raise ValueError(f"grid size must be >= 2, got {n}")
    moves = [(-1, 0), (0, 1), (1, 0), (0, -1), (0, 0)]
    B = np.zeros((n * n, n * n, 5))
    for r in range(n):
        for c in range(n):
            for u, (dr, dc) in enumerate(moves):
                r2, c2 = r + dr, c + dc
                if not (0 <= r2 < n and 0 <= c2 < n):
                    r2, c2 = r, c
                B[r2 * n + c2, r * n + c, u] = 1.0
    return B


def grid_likelihood(n: int, noise: float) -> np.ndarray:
    """A `[n*n, n*n]`: the true cell with 1 - noise, any cell uniformly with noise."""
    if not 0 <= noise < 1:
        raise ValueError(f"observation noise must be in [0, 1), got {noise}")
    N = n * n
    return (1.0 - noise) * np.eye(N) + noise / N


def grid_env(n: int = 7, noise: float = 0.1, start: int | None = None) -> CategoricalEnv:
    """The n x n grid world starting at `start` (default the centre cell)."""
    start = (n // 2) * n + n // 2 if start is None else start
    return _env([grid_likelihood(n, noise)], [grid_transitions(n)], [np.eye(n * n)[start]], [[0]], [[0]])


def grid_model(n: int = 7, noise: float = 0.1, start: int | None = None, learn: str = "B",
               concentration: float = 1.0, C=None) -> GenerativeModel:
    """The agent's grid model with `learn` in {'A', 'B', 'none'} unknown: flat Dirichlet priors of
    `concentration` on it, the true tensor for the other."""
    if learn not in ("A", "B", "none"):
        raise ValueError(f"learn must be 'A', 'B' or 'none', got {learn!r}")
    N = n * n
    start = (n // 2) * n + n // 2 if start is None else start
    A, B = grid_likelihood(n, noise), grid_transitions(n)
    pA = [np.full((N, N), concentration)] if learn == "A" else None
    pB = [np.full((N, N, 5), concentration)] if learn == "B" else None
    return generative_model(None if pA else [A], None if pB else [B], C, [np.eye(N)[start]], pA=pA, pB=pB)


# ---- foraging -------------------------------------------------------------------------------------------

def foraging_env(num_patches: int, schedule, trials_per_block: int, p_rich: float = 0.9,
                 p_poor: float = 0.1) -> CategoricalEnv:
    """`num_patches` patches, the rich one in block b `schedule[b]` (the last entry holds after the schedule)."""
    schedule = np.asarray(schedule, np.int32)
    K = int(num_patches)
    if K < 2:
        raise ValueError(f"num_patches must be >= 2, got {num_patches}")
    if schedule.ndim != 1 or schedule.size == 0 or schedule.min() < 0 or schedule.max() >= K:
        raise ValueError(f"schedule must be a non-empty 1-D array of patch indices in [0, {K}), got {schedule}")
    if trials_per_block < 1:
        raise ValueError(f"trials_per_block must be >= 1, got {trials_per_block}")
    for name, p in (("p_rich", p_rich), ("p_poor", p_poor)):
        if not 0 <= p <= 1:
            raise ValueError(f"{name} must be a probability, got {p}")
    L = K + 1
    A_loc = np.eye(L)
    A_food = np.zeros((2, L, K))
    A_food[NO_FOOD, HOME, :] = 1.0
    for k in range(K):
        for rich in range(K):
            p = p_rich if k == rich else p_poor
            A_food[FOOD, 1 + k, rich], A_food[NO_FOOD, 1 + k, rich] = p, 1.0 - p
    B_loc = np.zeros((L, L, L))
    for u in range(L):
        B_loc[u, :, u] = 1.0
    D = [np.eye(L)[HOME], np.full(K, 1.0 / K)]
    return _env([A_loc, A_food], [B_loc, np.eye(K)[:, :, None]], D, [[0], [0, 1]], [[0], [1]],
                context=jnp.asarray(schedule), context_factor=1, trials_per_block=trials_per_block)


def foraging_model(num_patches: int, food_preference: float = 2.0, concentration: float = 1.0,
                   known_food=None) -> GenerativeModel:
    """The forager's model: location (home + patches, go anywhere) and p(food | location) as pA with flat
    priors of `concentration` (home gives no food, known), or a fixed `known_food` `[K]` food rate per
    patch and no learning (the oracle / learning-off agents)."""
    L = num_patches + 1
    B_loc = np.zeros((L, L, L))
    for u in range(L):
        B_loc[u, :, u] = 1.0
    C = [np.zeros(L), np.array([0.0, food_preference])]
    D = [np.eye(L)[HOME]]
    if known_food is not None:
        food = np.asarray(known_food, np.float64)
        A_food = np.stack([1.0 - np.concatenate([[0.0], food]), np.concatenate([[0.0], food])])
        return generative_model([np.eye(L), A_food], [B_loc], C, D)
    pA_food = np.full((2, L), concentration)
    pA_food[:, HOME] = [1e4, 1e-4]   # home: no food, known (a sharp prior)
    return generative_model([np.eye(L), None], [B_loc], C, D, pA=[None, pA_food])
