"""The pieces of a matched fresh split (builder/match.py): quotas, strata, the Kolmogorov-Smirnov statistic."""

from __future__ import annotations

from collections import Counter

from builder.match import FULL, Matcher, Strata, ks_critical, ks_statistic, quotas, tertiles


def test_quotas_share_n_by_largest_remainder():
    assert quotas(Counter(a=5, b=3, c=2), 10) == {"a": 5, "b": 3, "c": 2}
    assert quotas(Counter(a=1, b=1, c=1), 10) == {"a": 4, "b": 3, "c": 3}  # ties broken by name
    assert sum(quotas(Counter(a=7, b=5, c=1), 20).values()) == 20


def test_ks_statistic_by_hand():
    assert ks_statistic([1, 2, 3], [1, 2, 3]) == 0.0
    assert ks_statistic([1, 1, 1], [2, 2, 2]) == 1.0
    assert ks_statistic([1, 2, 3, 4], [3, 4, 5, 6]) == 0.5
    assert round(ks_critical(100, 100), 4) == round(1.358 * (2 / 100) ** 0.5, 4)


def test_tertiles_and_strata():
    assert tertiles([5, 1, 3, 2, 4, 6]) == (2, 4)
    release = [(5, 1, 2, False, ()), (5, 2, 2, False, ()), (6, 3, 3, True, ()), (8, 4, 4, False, ()),
               (9, 5, 4, True, ()), (10, 6, 5, False, ())]
    strata = Strata(release, 6)
    assert sum(strata.quota.values()) == 6 and strata.on == "branch"
    assert {strata.key(f) for f in release} == set(strata.quota)
    assert strata.key(release[2]) == "calls1-bindings1-branch"


def test_frontier_strata_split_on_the_lever_nearest_one_half():
    """Frontier programs do not branch; their levers do vary: the strata take the one that splits the release
    most evenly, and the report gives each lever's share in the split and the release."""
    common = ("lookups", "loops", "pagination")
    release = [(10, 5, 3, False, common + ("recovery",) * (i % 2) + ("versions",) * (i % 10 != 0))
               for i in range(10)]
    strata = Strata(release, 4)
    assert strata.on == "recovery"  # 50%: versions (90%) and the levers every task has split nothing
    assert set(strata.quota) == {"calls0-bindings0-recovery", "calls0-bindings0-no-recovery"}
    m = Matcher({"session": [dict(num_api_calls=f[0], binding_count=f[1], path_depth=f[2], has_branch=f[3],
                                  levers=list(f[4])) for f in release]}, n=4, pool=3, source="rel")
    plain = dict(num_api_calls=10, binding_count=5, path_depth=3, has_branch=False, levers=list(common))
    kept = m.take("session", [plain] * 4 + [dict(plain, levers=[*common, "recovery"])] * 2, Counter())
    assert len(kept) == 4 and sum("recovery" in r["levers"] for r in kept) == 2
    shares = m.summary()["scenarios"]["session"]["lever_shares"]
    assert shares["recovery"] == {"split": 0.5, "release": 0.5} and shares["versions"] == {"split": 0.0,
                                                                                           "release": 0.9}
    again = Matcher({"session": [dict(plain)] * 2}, n=4, pool=3, source="rel")
    again.restore({"session": [[10, 5, 3, False]]})  # a checkpoint written before levers
    assert again.strata["session"].taken == [(10, 5, 3, False, ())]


def test_a_full_stratum_turns_tasks_away_and_counts_them():
    release = {"tensor": [dict(num_api_calls=5, binding_count=2, path_depth=3, has_branch=False)] * 3
               + [dict(num_api_calls=5, binding_count=2, path_depth=3, has_branch=True)]}
    m = Matcher(release, n=4, pool=3, source="rel")
    straight = dict(num_api_calls=5, binding_count=2, path_depth=3, has_branch=False)
    branch = dict(straight, has_branch=True)
    rejections = Counter()
    kept = m.take("tensor", [straight] * 5 + [branch] * 2, rejections)
    assert kept == [straight] * 3 + [branch] and m.full("tensor") and m.limit("tensor") == 12
    assert rejections == Counter({f"tensor: {FULL}": 3})
    again = Matcher(release, n=4, pool=3, source="rel")
    again.restore(m.state())  # a resumed build picks up the quotas where the checkpoint left them
    assert again.full("tensor") and again.summary() == m.summary()
    assert m.take("voice", [straight], Counter()) == [straight] and m.limit("voice") == 4  # not in the release
