//! `tessera init [DIR]`: the example cards and plans the quick starts use,
//! written where a user runs them (the binary carries them: after `cargo
//! install` there is no repository to read them from).

use std::path::{Path, PathBuf};

use clap::Args;
use eyre::{Context, Result, bail};

/// Every file `tessera init` writes: its path under the directory, and its
/// contents as in the repository.
pub(crate) const FILES: &[(&str, &str)] = &[
    ("workers/cards/brief.yaml", include_str!("../../workers/cards/brief.yaml")),
    ("workers/cards/extractor.yaml", include_str!("../../workers/cards/extractor.yaml")),
    ("workers/cards/llm-sentiment.yaml", include_str!("../../workers/cards/llm-sentiment.yaml")),
    ("workers/cards/sentiment.yaml", include_str!("../../workers/cards/sentiment.yaml")),
    ("workers/cards/summarizer-a.yaml", include_str!("../../workers/cards/summarizer-a.yaml")),
    ("workers/cards/summarizer.yaml", include_str!("../../workers/cards/summarizer.yaml")),
    ("workers/cards/translator.yaml", include_str!("../../workers/cards/translator.yaml")),
    (
        "examples/translate-then-summarize.json",
        include_str!("../../examples/translate-then-summarize.json"),
    ),
    ("examples/article.txt", include_str!("../../examples/article.txt")),
    (
        "examples/agents/node-readability/card.yaml",
        include_str!("../../examples/agents/node-readability/card.yaml"),
    ),
    (
        "examples/agents/node-readability/agent.js",
        include_str!("../../examples/agents/node-readability/agent.js"),
    ),
    (
        "examples/agents/python-haiku/card.yaml",
        include_str!("../../examples/agents/python-haiku/card.yaml"),
    ),
    (
        "examples/agents/python-haiku/agent.py",
        include_str!("../../examples/agents/python-haiku/agent.py"),
    ),
];

/// `tessera init`: where, and whether to overwrite.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The directory to write into (created when missing).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Overwrite files that already exist (else nothing is written when
    /// one does).
    #[arg(long)]
    force: bool,
}

/// Writes [`FILES`] under `dir`; refuses, writing nothing, when one exists
/// and `force` is not given. The paths written, in order.
pub(crate) fn write(dir: &Path, force: bool) -> Result<Vec<PathBuf>> {
    let paths: Vec<PathBuf> = FILES.iter().map(|(p, _)| dir.join(p)).collect();
    if !force {
        let there: Vec<String> =
            paths.iter().filter(|p| p.exists()).map(|p| p.display().to_string()).collect();
        if !there.is_empty() {
            bail!(
                "{} already exist{}: nothing written (--force overwrites)",
                there.join(", "),
                if there.len() == 1 { "s" } else { "" }
            );
        }
    }
    for (path, (_, text)) in paths.iter().zip(FILES) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .wrap_err_with(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(path, text).wrap_err_with(|| format!("writing {}", path.display()))?;
    }
    Ok(paths)
}

/// `tessera init [DIR] [--force]`.
pub(crate) fn run(args: &InitArgs) -> Result<()> {
    let written = write(&args.dir, args.force)?;
    for p in &written {
        println!("wrote {}", p.display());
    }
    println!(
        "next: `tessera chain`, then the quick start (README): workers from workers/cards/, a plan from examples/"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_writes_the_examples_and_overwrites_only_when_forced() {
        let dir = tempfile::tempdir().unwrap();
        let written = write(dir.path(), false).unwrap();
        assert_eq!(written.len(), FILES.len());
        let plan =
            std::fs::read_to_string(dir.path().join("examples/translate-then-summarize.json"));
        let plan: serde_json::Value = serde_json::from_str(&plan.unwrap()).unwrap();
        assert_eq!(plan["version"], 1);
        assert!(dir.path().join("workers/cards/translator.yaml").is_file());
        // A second time: refused, nothing touched.
        std::fs::write(dir.path().join("examples/article.txt"), "mine").unwrap();
        let refused = write(dir.path(), false).unwrap_err().to_string();
        assert!(refused.contains("already exist") && refused.contains("--force"), "{refused}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("examples/article.txt")).unwrap(),
            "mine"
        );
        write(dir.path(), true).unwrap();
        let article = std::fs::read_to_string(dir.path().join("examples/article.txt")).unwrap();
        assert_eq!(article, FILES.iter().find(|(p, _)| *p == "examples/article.txt").unwrap().1);
    }
}
