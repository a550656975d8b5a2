"""Embodied agents by active inference ("Position: A Call for Embodied AI", Paolo, Gonzalez-Billandon
and Kegl, ICML 2024): the paper's perception / action / memory / learning architecture as one jitted
JAX agent on discrete POMDPs, numerically matched to pymdp (within 1.2e-6).

    from jaxml.papers import embodied
    model, env = embodied.tmaze_model(), embodied.tmaze_env()
    post = embodied.infer_states(model, obs=[0, 0, 0])                  # perception: q(s), free energy
    q_pi, neg_efe = embodied.infer_policies(model, post.qs, gamma=16.0)  # action: q(pi), -G per policy
    final, episodes = embodied.run_population(models, envs, embodied.AgentSettings(),
                                              embodied.LearningSettings(learn_A=True), keys,
                                              num_trials=100, num_steps=2, mesh=mesh)
"""

from jaxml.papers.embodied import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.embodied.action import (action_marginals, expected_obs, expected_states, infer_policies,
                                          neg_efe_all, neg_efe_policy, param_info_gain_A, param_info_gain_B,
                                          policy_posterior, sample_action, sophisticated_search, state_info_gain,
                                          step_value, utility)
from jaxml.papers.embodied.agent import AgentSettings, act, run_population, run_trial, run_trials
from jaxml.papers.embodied.envs import (CategoricalEnv, foraging_env, foraging_model, grid_env, grid_model,
                                        tmaze_arrays, tmaze_env, tmaze_model)
from jaxml.papers.embodied.learning import update_A, update_B, update_D
from jaxml.papers.embodied.memory import EpisodicBuffer, LearningSettings, empirical_prior, learn_from_episode
from jaxml.papers.embodied.model import (GenerativeModel, broadcast_model, construct_policies, dirichlet_mean,
                                         generative_model, stack_models)
from jaxml.papers.embodied.perception import (Posterior, free_energy, free_energy_trace, infer_states,
                                              infer_states_sequence)

__all__ = ["AgentSettings", "CategoricalEnv", "EpisodicBuffer", "GenerativeModel", "LearningSettings",
           "Posterior", "act", "action_marginals", "broadcast_model", "construct_policies", "dirichlet_mean",
           "empirical_prior", "expected_obs", "expected_states", "foraging_env", "foraging_model",
           "free_energy", "free_energy_trace", "generative_model", "grid_env", "grid_model", "infer_policies",
           "infer_states", "infer_states_sequence", "learn_from_episode", "neg_efe_all", "neg_efe_policy", "param_info_gain_A",
           "param_info_gain_B", "policy_posterior", "run_population", "run_trial", "run_trials",
           "sample_action", "sophisticated_search", "stack_models", "state_info_gain", "step_value",
           "tmaze_arrays", "tmaze_env", "tmaze_model", "update_A", "update_B", "update_D", "utility"]
