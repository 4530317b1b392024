//! Skills: `SKILL.md` files (front matter `name`, `description`) found under
//! the skill roots, listed in the system prompt and loaded on demand by the
//! `skill` tool. The first skill of a name wins.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use zot_protocol::frontmatter;

use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// How deep under a root `SKILL.md` files are looked for.
pub const MAX_DEPTH: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
}

/// Where skills are looked for.
#[derive(Debug, Clone, Copy)]
pub struct Places<'a> {
    pub cwd: &'a Path,
    pub zot_home: &'a Path,
    pub home: Option<&'a Path>,
    /// Whether the project is trusted: its skill folders
    /// ([`PROJECT_SKILL_ROOTS`]) are read only then.
    pub project_trusted: bool,
}

/// The skill folders' names live in `zot-protocol`, which the host's trust
/// gate shares.
pub use zot_protocol::layout::{AGENTS_SKILLS, CLAUDE_SKILLS, PROJECT_SKILL_ROOTS, ZOT_SKILLS};

/// The skill roots in search order: `./.zot/skills`, `$ZOT_HOME/skills`,
/// `./.agents/skills`, `~/.agents/skills`, `./.claude/skills`,
/// `~/.claude/skills` (the project's three only in a trusted project); then
/// `extra` (extension bundles).
pub fn roots(places: Places<'_>, extra: &[PathBuf]) -> Vec<PathBuf> {
    let Places {
        cwd,
        zot_home,
        home,
        project_trusted,
    } = places;
    let project = |rel: &str| project_trusted.then(|| cwd.join(rel));
    let user = |rel: &str| home.map(|home| home.join(rel));
    [
        project(ZOT_SKILLS),
        Some(zot_home.join("skills")),
        project(AGENTS_SKILLS),
        user(AGENTS_SKILLS),
        project(CLAUDE_SKILLS),
        user(CLAUDE_SKILLS),
    ]
    .into_iter()
    .flatten()
    .chain(extra.iter().cloned())
    .collect()
}

/// The project's skill folders that hold a skill, which an untrusted
/// project leaves out.
pub fn project_roots_with_skills(cwd: &Path) -> Vec<&'static str> {
    PROJECT_SKILL_ROOTS
        .iter()
        .copied()
        .filter(|rel| {
            let mut files = Vec::new();
            collect(&cwd.join(rel), 0, &mut files);
            !files.is_empty()
        })
        .collect()
}

/// Every skill under `roots` (a root may also be a `SKILL.md` file itself).
pub fn discover(roots: &[PathBuf]) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for root in roots {
        let mut files = Vec::new();
        if root.is_file() {
            files.push(root.clone());
        } else {
            collect(root, 0, &mut files);
        }
        files.sort();
        for file in files {
            if let Some(skill) = parse(&file)
                && !skills.iter().any(|s| s.name == skill.name)
            {
                skills.push(skill);
            }
        }
    }
    skills
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, depth + 1, out);
        } else if path.file_name().is_some_and(|n| n == "SKILL.md") {
            out.push(path);
        }
    }
}

fn parse(file: &Path) -> Option<Skill> {
    let text = std::fs::read_to_string(file).ok()?;
    let dir_name = file.parent()?.file_name()?.to_string_lossy().into_owned();
    let front = frontmatter::parse(&text);
    Some(Skill {
        name: front
            .get("name")
            .filter(|n| !n.is_empty())
            .map_or(dir_name, str::to_owned),
        description: front.get("description").unwrap_or_default().to_owned(),
        path: file.to_path_buf(),
    })
}

/// The system prompt section that lists the skills.
pub fn manifest(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("Available skills (load one with the skill tool before you follow it):\n");
    for skill in skills {
        out.push_str(&format!("- {}: {}\n", skill.name, skill.description));
    }
    out
}

/// The `skill` tool: returns a skill's instructions.
pub struct SkillTool {
    skills: Vec<Skill>,
}

impl SkillTool {
    pub fn new(skills: Vec<Skill>) -> Arc<Self> {
        Arc::new(Self { skills })
    }
}

impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skill".into(),
            description: "Load the full instructions of a skill listed in the system prompt."
                .into(),
            schema: json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "the skill's name"}},
                "required": ["name"]
            })
            .into(),
            read_only: true,
        }
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(name) = args.get("name").and_then(Value::as_str) else {
                return ToolOutput::error("skill: \"name\" (a string) is required");
            };
            let Some(skill) = self.skills.iter().find(|s| s.name == name) else {
                let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
                return ToolOutput::error(format!(
                    "no skill named \"{name}\" (known: {})",
                    known.join(", ")
                ));
            };
            match std::fs::read_to_string(&skill.path) {
                Ok(text) => {
                    let body = frontmatter::parse(&text).body;
                    ToolOutput::text(format!(
                        "# Skill: {}\n\n{}\n\n---\n\n{body}",
                        skill.name, skill.description
                    ))
                }
                Err(e) => ToolOutput::error(format!("cannot read {}: {e}", skill.path.display())),
            }
        })
    }

    /// `call` parses the arguments field by field, by the schema's rules.
    fn checks_own_arguments(&self) -> bool {
        true
    }
}
