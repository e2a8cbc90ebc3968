//! Briefs with a sub-goal structure: numbered goals, at least one of them
//! several steps. Each goal is planned on its own by the offline rules; a
//! goal of several steps becomes a nested plan (its leaves at paths `g.k`),
//! a goal of one step a plain step (path `g`). Goals run side by side,
//! except one that opens with a sequencing word (`then`, `finally`) or
//! speaks of what came before (`the findings`, `the results`, `both`,
//! `the above`): it waits for every earlier goal's last steps.
//!
//! ```text
//! Prepare a briefing on the article below.
//! 1. Translate it to French, then summarize the translation.
//! 2. List the entities and classify the sentiment.
//! 3. Finally, summarize the findings for the board.
//! ```
//!
//! gives `0.0` translate → `0.1` summarize, `1.0` entities → `1.1`
//! sentiment, and `2` a summary of `0.1` and `1.1`.

use crate::{
    classify::{ProposedGroup, ProposedSubTask},
    reading::{Reading, list_item},
};

/// Most goals a brief may list for the rule to apply.
pub const MAX_GOALS: usize = 8;

/// Words that make a goal wait for the goals before it.
const FOLLOWS: &[&str] = &[
    "then",
    "finally",
    "next",
    "afterwards",
    "lastly",
    "findings",
    "results",
    "above",
    "both",
    "everything",
    "outputs",
];

/// A brief's goals as a plan: leaves with paths, and the nested plans.
#[derive(Debug, Clone, PartialEq)]
pub struct Goals {
    /// Every leaf, indexed in path order.
    pub plan: Vec<ProposedSubTask>,
    /// One entry per goal of several steps.
    pub groups: Vec<ProposedGroup>,
    /// How many goals, and which wait for the others.
    pub reasoning: String,
}

/// The numbered goals of `brief` (the lines `1. …`, `2. …` in order), when
/// there are two to [`MAX_GOALS`]. Bulleted lines are material, not goals.
fn numbered(brief: &str) -> Option<(Vec<String>, Option<String>)> {
    let mut goals = Vec::new();
    let mut after = None;
    for (i, line) in brief.lines().enumerate() {
        let l = line.trim_start();
        let is_numbered = l.starts_with(|c: char| c.is_ascii_digit());
        match list_item(line) {
            Some(item) if is_numbered => {
                if after.is_some() {
                    return None;
                }
                goals.push(item.to_owned());
            }
            _ if !goals.is_empty() && after.is_none() && l.trim().is_empty() => after = Some(i),
            _ => {}
        }
    }
    if !(2..=MAX_GOALS).contains(&goals.len()) {
        return None;
    }
    // The material: whatever follows the list after a blank line.
    let material = after
        .map(|i| brief.lines().skip(i + 1).collect::<Vec<_>>().join("\n").trim().to_owned())
        .filter(|m| !m.is_empty());
    Some((goals, material))
}

/// Plans `brief` as goals, each through `plan_one` (the offline rules on
/// the goal's own text; `None` when the goal names no work); `None` unless
/// every goal names work and at least one is several steps.
pub fn plan(
    brief: &str,
    plan_one: impl Fn(&Reading) -> Option<Vec<ProposedSubTask>>,
) -> Option<Goals> {
    let (goals, material) = numbered(brief)?;
    let mut planned = Vec::with_capacity(goals.len());
    for goal in &goals {
        let reading = Reading::of(goal);
        let steps = plan_one(&reading)?;
        if steps.is_empty() {
            return None;
        }
        planned.push((goal, reading, steps));
    }
    if planned.iter().all(|(_, _, steps)| steps.len() < 2) {
        return None;
    }
    let mut plan: Vec<ProposedSubTask> = Vec::new();
    let mut groups = Vec::new();
    // Each goal's last steps (global indexes), for the goals that follow.
    let mut finals: Vec<Vec<u32>> = Vec::new();
    let mut waiting = Vec::new();
    for (g, (goal, reading, steps)) in planned.into_iter().enumerate() {
        let follows = g > 0 && reading.words().any(|w| FOLLOWS.contains(&w));
        let upstream: Vec<u32> =
            if follows { finals.iter().flatten().copied().collect() } else { Vec::new() };
        if follows {
            waiting.push(g + 1);
        }
        let base = plan.len() as u32;
        let nested = steps.len() >= 2;
        if nested {
            groups.push(ProposedGroup { path: g.to_string(), spec: sentence(goal) });
        }
        let depended: Vec<u32> = steps.iter().flat_map(|s| s.depends_on.clone()).collect();
        let mut last = Vec::new();
        for step in steps {
            let local = step.index;
            let mut depends_on: Vec<u32> = step.depends_on.iter().map(|d| base + d).collect();
            let mut spec = step.spec;
            if depends_on.is_empty() {
                depends_on.clone_from(&upstream);
                // A goal's first steps get the brief's material, as a plan's
                // first step does.
                if upstream.is_empty()
                    && let Some(m) = &material
                {
                    spec = crate::offline::bounded(format!("{spec}: {m}"));
                }
            }
            if !depended.contains(&local) {
                last.push(base + local);
            }
            plan.push(ProposedSubTask {
                index: base + local,
                spec,
                depends_on,
                path: Some(if nested { format!("{g}.{local}") } else { g.to_string() }),
                ..step
            });
        }
        finals.push(last);
    }
    let reasoning = format!(
        "{} numbered goals, {} of them several steps run as nested plans{}.",
        finals.len(),
        groups.len(),
        if waiting.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = waiting.iter().map(usize::to_string).collect();
            format!("; goal {} waits for the goals before it", list.join(", "))
        }
    );
    Some(Goals { plan, groups, reasoning })
}

fn sentence(goal: &str) -> String {
    let g = goal.trim().trim_end_matches(['.', ';', ':']);
    let mut chars = g.chars();
    chars.next().map_or_else(String::new, |f| f.to_uppercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BRIEF: &str = "Prepare a briefing on the article below.
1. Translate it to French, then summarize the translation.
2. List the entities and classify the sentiment.
3. Finally, summarize the findings for the board.

The harbour authority opened a new ferry line on Friday.";

    fn offline(r: &Reading) -> Option<Vec<ProposedSubTask>> {
        crate::offline::plan_reading(r, &crate::catalogue_match::Matcher::builtins())
            .map(|c| c.plan)
    }

    #[test]
    fn numbered_goals_become_nested_plans_with_edges_between_them() {
        let goals = plan(BRIEF, offline).expect("a goal structure");
        let shape: Vec<(u32, &str, &str, Vec<u32>)> = goals
            .plan
            .iter()
            .map(|s| {
                (s.index, s.path.as_deref().unwrap(), s.capability.as_str(), s.depends_on.clone())
            })
            .collect();
        assert_eq!(
            shape,
            [
                (0, "0.0", "translate", vec![]),
                (1, "0.1", "summarize", vec![0]),
                (2, "1.0", "extract-entities", vec![]),
                // "and" before a new capability verb chains, as in any brief.
                (3, "1.1", "sentiment-classify", vec![2]),
                (4, "2", "summarize", vec![1, 3]),
            ]
        );
        assert_eq!(goals.groups.len(), 2);
        assert_eq!(goals.groups[0].path, "0");
        assert_eq!(goals.groups[0].spec, "Translate it to French, then summarize the translation");
        // The first steps of goals that wait for nothing carry the material.
        assert!(
            goals.plan[0]
                .spec
                .ends_with("The harbour authority opened a new ferry line on Friday.")
        );
        assert!(goals.plan[2].spec.contains("ferry line"));
        assert!(!goals.plan[3].spec.contains("ferry line"));
        assert!(!goals.plan[4].spec.contains("ferry line"));
        assert!(goals.reasoning.contains("3 numbered goals, 2 of them"), "{}", goals.reasoning);
    }

    #[test]
    fn lists_that_are_not_goals_are_left_to_the_other_rules() {
        // Items that name no work are material (a fan-out's items).
        let reviews = "Summarize each of these reviews:\n1. Great phone.\n2. Battery died.";
        assert_eq!(plan(reviews, offline), None);
        // Goals of one step each: a plain plan, not a nested one.
        let flat = "1. Translate the note to French.\n2. Classify the sentiment of the note.";
        assert_eq!(plan(flat, offline), None);
        // A single goal, or bullets, are not a goal list.
        assert_eq!(plan("1. Translate it, then summarize it.", offline), None);
        let bullets = "- Translate it, then summarize it.\n- List the entities.";
        assert_eq!(plan(bullets, offline), None);
        let many: String =
            (1..=9).map(|i| format!("{i}. Translate part {i}, then summarize it.\n")).collect();
        assert_eq!(plan(&many, offline), None, "more than {MAX_GOALS} goals");
    }
}
