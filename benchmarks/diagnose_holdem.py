"""How a limit Texas Hold'em checkpoint plays against ``holdem_rules`` (issue 38).

Plays ``--hands`` hands of PettingZoo's limit Hold'em (the checkpoint's number of players): the
checkpoint's first learning policy in one seat, turning round the table hand by hand, the rule
player (:mod:`league.games.poker.holdem_rules`) in every other seat, or with ``--opponent`` one
of the two other styles of :mod:`league.games.poker.holdem_styles`: ``holdem_station`` (checks or
calls, never raises or folds) or ``holdem_maniac`` (raises whenever it may, else calls). Prints the chips a hand the
policy won (big blinds, with its standard error), then the share of each action it chose by
street, by whether it faced a raise, and by the best hand among the cards it saw (preflop: the two
cards; later: high card, a pair, or better). A policy that reads its cards raises better hands
more and folds worse ones to a raise; one that does not shows the same row whatever its hand.
The last line is one JSON object with the figures.

With ``--versus OTHER``, the two checkpoints play each other instead: the first in one seat, the
other in every other seat, every deal played once from each seat (duplicate poker, which
cancels most of the cards' luck), and the chips a hand the first won, with the standard error
over deals. A yardstick player ranks policies by how they exploit it; head to head ranks them
by how they play each other.

Usage::

    python benchmarks/diagnose_holdem.py RUN_OR_CHECKPOINT [--hands 2000] [--greedy] [--seed 0] [--opponent holdem_maniac]
    python benchmarks/diagnose_holdem.py RUN_OR_CHECKPOINT --versus OTHER_RUN [--hands 2000]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from bench_search_play import _policy  # the checkpoint's first learning policy and its env config

STREETS = {2: "preflop", 5: "flop", 6: "turn", 7: "river"}  # cards seen -> betting round
CLASSES = ("preflop", "high card", "pair", "better")
OPPONENTS = ("holdem_rules", "holdem_station", "holdem_maniac")  # league.games.poker.holdem_styles.HOLDEM_STYLES


def _scripted(name: str, seed: int) -> Callable[[np.ndarray, np.ndarray], int]:
    """``act(obs, mask) -> action`` of the scripted player ``name`` (one of :data:`OPPONENTS`)."""
    import league.games  # noqa: F401  (registers the poker plug-in's players)
    from league.envs.base import AgentSpec
    from league.games.poker.holdem_rules import HoldemRulesPlayer
    from league.population.scripted import scripted_factory

    spec = AgentSpec(HoldemRulesPlayer.obs_shape, HoldemRulesPlayer.num_actions, True)
    player = scripted_factory(name, spec).make_policy(seed=seed)
    return lambda obs, mask: int(player.compute_actions(obs, mask, explore=False)["actions"][0])


def profile(checkpoint: str, hands: int, greedy: bool = False, seed: int = 0, opponent: str = "holdem_rules") -> dict:
    """Chips a hand against ``opponent`` in every other seat and the action shares described above."""
    from pettingzoo.classic import texas_holdem_v4

    from league.games.poker.holdem_rules import CALL, _cards, hand_categories

    policy, env_cfg = _policy(checkpoint)
    players = int((env_cfg.get("kwargs") or {}).get("num_players", 2))
    scripted = _scripted(opponent, seed)
    counts: dict[tuple[str, str, str], np.ndarray] = defaultdict(lambda: np.zeros(4))
    env = texas_holdem_v4.env(num_players=players)
    chips = np.zeros(hands)
    for hand in range(hands):
        env.reset(seed=seed * 1_000_003 + hand)
        me = env.agents[hand % players]
        for agent in env.agent_iter():
            _, reward, terminated, truncated, _ = env.last()
            if agent == me:
                chips[hand] += reward
            if terminated or truncated:
                env.step(None)
                continue
            seen = env.observe(agent)
            obs, mask = seen["observation"].astype(np.float32)[None], seen["action_mask"].astype(np.int8)[None]
            if agent != me:
                env.step(scripted(obs, mask))
                continue
            action = int(policy.compute_actions(obs, mask, explore=not greedy)["actions"][0])
            cards = _cards(obs)
            n_seen = int(cards.sum())
            kind = CLASSES[0] if n_seen == 2 else CLASSES[1 + min(int(hand_categories(cards)[0]), 2)]
            counts[(STREETS[n_seen], "facing a raise" if mask[0, CALL] else "no raise to face", kind)][action] += 1
            env.step(action)
    shares = {" / ".join(k): {"n": int(v.sum()), **dict(zip(("call", "raise", "fold", "check"), np.round(v / v.sum(), 3).tolist()))}
              for k, v in sorted(counts.items(), key=lambda kv: (list(STREETS.values()).index(kv[0][0]), kv[0][1], CLASSES.index(kv[0][2])))}
    return {"checkpoint": checkpoint, "opponent": opponent, "players": players, "hands": hands, "greedy": greedy,
            "chips_a_hand": round(float(chips.mean()), 4), "standard_error": round(float(chips.std() / np.sqrt(hands)), 4),
            "shares": shares}


def head_to_head(checkpoint: str, other: str, hands: int, greedy: bool = False, seed: int = 0) -> dict:
    """Chips a hand ``checkpoint``'s policy wins with ``other``'s in every other seat (the
    checkpoints' number of players), each deal played once from every seat (``hands`` rounded
    down to a multiple of the number of players)."""
    from pettingzoo.classic import texas_holdem_v4

    policies, players = {}, set()
    for which, path in (("first", checkpoint), ("second", other)):
        policies[which], env_cfg = _policy(path)
        players.add(int((env_cfg.get("kwargs") or {}).get("num_players", 2)))
    if len(players) != 1:
        raise SystemExit(f"--versus needs two checkpoints of the same number of players; {checkpoint} and {other} differ: {sorted(players)}")
    n = players.pop()
    deals = hands // n
    chips = np.zeros((deals, n))
    env = texas_holdem_v4.env(num_players=n)
    for deal in range(deals):
        for turn in range(n):
            env.reset(seed=seed * 1_000_003 + deal)  # the same cards to the same seats
            first = env.agents[turn]
            for agent in env.agent_iter():
                _, reward, terminated, truncated, _ = env.last()
                if agent == first:
                    chips[deal, turn] += reward
                if terminated or truncated:
                    env.step(None)
                    continue
                seen = env.observe(agent)
                obs, mask = seen["observation"].astype(np.float32)[None], seen["action_mask"].astype(np.int8)[None]
                policy = policies["first" if agent == first else "second"]
                env.step(int(policy.compute_actions(obs, mask, explore=not greedy)["actions"][0]))
    per_deal = chips.mean(axis=1)
    return {"checkpoint": checkpoint, "versus": other, "players": n, "hands": n * deals, "greedy": greedy,
            "chips_a_hand": round(float(per_deal.mean()), 4), "standard_error": round(float(per_deal.std() / np.sqrt(deals)), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a run directory or checkpoint of a limit Texas Hold'em run")
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--greedy", action="store_true", help="the policy's most likely action (default: sampled, as trained)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--opponent", choices=OPPONENTS, default="holdem_rules", help="the scripted style in every other seat")
    parser.add_argument("--versus", default=None, help="a second checkpoint of as many players: it fills every other seat instead")
    args = parser.parse_args()
    if args.versus:
        out = head_to_head(args.checkpoint, args.versus, args.hands, args.greedy, args.seed)
        print(f"{out['hands']} hands (each deal from every seat): {out['chips_a_hand']:+.3f} chips a hand won from "
              f"{args.versus} (standard error {out['standard_error']:.3f})")
        print(json.dumps(out))
        return
    out = profile(args.checkpoint, args.hands, args.greedy, args.seed, args.opponent)
    print(f"{out['players']} players, {out['hands']} hands: {out['chips_a_hand']:+.3f} chips a hand against {args.opponent} "
          f"(standard error {out['standard_error']:.3f})")
    print(f"{'street / facing / best hand':<52} {'n':>6} {'call':>6} {'raise':>6} {'fold':>6} {'check':>6}")
    for key, row in out["shares"].items():
        print(f"{key:<52} {row['n']:>6} {row['call']:>6.2f} {row['raise']:>6.2f} {row['fold']:>6.2f} {row['check']:>6.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
