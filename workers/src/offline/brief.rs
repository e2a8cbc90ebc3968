//! `brief`: the material translated, then summarized — a capability made of
//! a part another agent can do (`translate`) and local work on its result
//! (`summarize`). An agent whose card delegates `translate` hires another
//! agent for that part (see [`crate::runtime`]); one that does not runs
//! both here.

use serde::Serialize;

use super::{Summary, TaskInput, WorkerError, summarize, translate};

/// A capability with a part that may be delegated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Composite {
    /// The part another agent may do.
    pub delegable: &'static str,
    /// The local work on that part's result.
    pub then: &'static str,
}

/// The delegable part of `capability`, if it has one.
pub fn composite(capability: &str) -> Option<Composite> {
    match capability {
        "brief" => Some(Composite { delegable: "translate", then: "summarize" }),
        _ => None,
    }
}

/// Who did the delegated part, and what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DelegatedWork {
    /// The capability delegated.
    pub capability: String,
    /// The child task (decimal id).
    pub task: String,
    /// The agent that did it.
    pub executor: String,
    /// What the child task paid it, base units.
    pub paid: String,
}

/// Result of `brief`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Brief {
    /// The translated material that was summarized.
    pub translation: String,
    /// Its summary.
    pub summary: Summary,
    /// The child task that translated it, when the translation was delegated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated: Option<DelegatedWork>,
}

/// Translates the material into the language the spec names, then
/// summarizes the translation, all here.
pub fn brief(input: &TaskInput<'_>) -> Result<Brief, WorkerError> {
    let material = input.material_for("brief")?;
    if material.text.trim().is_empty() {
        return Err(WorkerError::EmptyMaterial { capability: "brief" });
    }
    let translation = translate(input)?;
    brief_of(&translation.text, input.spec, None)
}

/// Summarizes `translation` (done here or by a delegated agent) as the
/// spec asks.
pub fn brief_of(
    translation: &str,
    spec: &str,
    delegated: Option<DelegatedWork>,
) -> Result<Brief, WorkerError> {
    let inputs = [translation.to_owned()];
    let summary = summarize(&TaskInput::new(spec).with_inputs(&inputs))?;
    Ok(Brief { translation: translation.to_owned(), summary, delegated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_summarizes_the_translation() {
        let input = TaskInput::new("Brief in French, two bullets")
            .with_source("The city approved the budget. The school is new. The market is open.");
        let b = brief(&input).unwrap();
        assert_ne!(b.translation, input.source.unwrap(), "translated");
        assert_eq!(b.summary.bullets.len(), 2);
        assert!(b.summary.bullets.iter().all(|s| b.translation.contains(s.as_str())), "{b:?}");
        assert_eq!(b.delegated, None);
        assert_eq!(composite("brief").unwrap().delegable, "translate");
        assert_eq!(composite("summarize"), None);
    }
}
