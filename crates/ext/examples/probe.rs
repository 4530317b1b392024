//! The SDK's own test extension, and a tour of the whole API: every command
//! answer, typed, raw and deferred tools, every interceptor, events, a panel
//! and the one-way frames. Behaviour is keyed by input so the tests in
//! `tests/suite/` can drive each path; observed events go to
//! `<data_dir>/events.jsonl`.
//!
//! Usage: `probe [NAME] [minimal]`. `minimal` registers one command only.

use std::io::Write;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use zot_ext::serde_json::{Value, json};
use zot_ext::{
    Event, Extension, Host, Key, MessageDecision, NotifyLevel, Panel, Response, ToolCallDecision,
    ToolResult, TurnDecision,
};

/// Arguments of the `forecast` tool.
#[derive(Deserialize, JsonSchema)]
struct Forecast {
    /// City name, e.g. "Berlin".
    city: String,
    /// How many days ahead (1 if omitted).
    days: Option<u8>,
    units: Units,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Celsius,
    Fahrenheit,
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

const PANEL: &str = "probe-panel";

fn main() -> Result<(), zot_ext::Error> {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "probe".to_owned());
    if args.next().as_deref() == Some("minimal") {
        return Extension::new(name, "0.1.0")
            .command("ping", "", |_, _| Response::display("pong"))
            .run();
    }
    Extension::new(name, "0.1.0")
        .command("say", "prompt", |args, _| {
            Response::prompt(format!("say {args}"))
        })
        .command("ins", "insert", |args, _| Response::insert(args))
        .command("show", "display", |args, _| Response::display(args))
        .command("nothing", "noop", |_, _| Response::noop())
        .command("fail", "error", |args, _| {
            Response::error(format!("failed: {args}"))
        })
        .command("both", "display with error", |_, _| {
            Response::display("shown").with_error("and an error")
        })
        .command("panel", "open a panel", |_, _| {
            Response::open_panel(panel(&["one", "two"]))
        })
        .command("boom", "panics", |_, _| panic!("command exploded"))
        .command("slow", "answers after a while", |_, _| {
            std::thread::sleep(Duration::from_millis(700));
            Response::display("slow done")
        })
        .command("notes", "one-way frames", |args, host| {
            host.notify(NotifyLevel::Warn, format!("note {args}"));
            host.clear_notes();
            host.submit(format!("submitted {args}"));
            Response::noop()
        })
        .tool(
            "forecast",
            "Weather forecast for a city.",
            |args: Forecast, _| {
                let units = match args.units {
                    Units::Celsius => "C",
                    Units::Fahrenheit => "F",
                };
                ToolResult::text(format!(
                    "{}: 21{units} for {} day(s)",
                    args.city,
                    args.days.unwrap_or(1)
                ))
            },
        )
        .raw_tool(
            "echo",
            "Echoes its arguments, plus a 1-pixel image.",
            json!({"type": "object", "properties": {"msg": {"type": "string"}}}),
            |args, _| ToolResult::text(args.to_string()).with_image("image/png", "iVBORw0KGgo="),
        )
        .tool::<NoArgs>("loader", "Enables the secret tool.", |_, _| {
            ToolResult::text("enabled secret").activate_tools(["secret"])
        })
        .deferred_tool("secret", "Tells the secret.", |_: NoArgs, _| {
            ToolResult::text("the secret is 42")
        })
        .raw_tool("explode", "Panics.", json!({"type": "object"}), |_, _| {
            panic!("tool exploded")
        })
        .raw_tool("refuse", "Fails.", json!({"type": "object"}), |_, _| {
            ToolResult::error("refused on purpose")
        })
        .intercept_tool_call(|call, _| {
            let command = call.args["command"].as_str().unwrap_or_default();
            if command.contains("PANIC") {
                panic!("interceptor exploded");
            }
            if let Some(task) = &call.parent_tool_call_id {
                return ToolCallDecision::block(format!("not for the subagent of {task}"));
            }
            match (call.name.as_str(), command) {
                ("bash", c) if c.contains("rm -rf") => {
                    ToolCallDecision::block(format!("refused: {c}"))
                }
                ("bash", "ls") => ToolCallDecision::Rewrite(json!({"command": "echo GUARDED: ls"})),
                ("bash", "bad rewrite") => ToolCallDecision::Rewrite(json!("not an object")),
                _ => ToolCallDecision::Allow,
            }
        })
        .intercept_turn_start(|step, _| match step {
            99 => panic!("turn interceptor exploded"),
            s if s >= 3 => TurnDecision::block(format!("step {s} is too many")),
            _ => TurnDecision::Allow,
        })
        .intercept_assistant_message(|text, _| {
            if text.contains("FORBIDDEN") {
                MessageDecision::block("forbidden text")
            } else if text.contains("SECRET") {
                MessageDecision::replace(text.replace("SECRET", "[redacted]"))
            } else {
                MessageDecision::Allow
            }
        })
        .intercept_before_agent_start(|start, _| {
            if start.system_prompt == "keep" {
                return None;
            }
            Some(format!(
                "{}\n[probe: {}/{} in {}]",
                start.system_prompt, start.provider, start.model, start.cwd
            ))
        })
        .on("session_start", record)
        .on("turn_start", record)
        .on("tool_call", record)
        .on("turn_end", record)
        .on("turn_end", |event, host| {
            if let Event::TurnEnd { error: Some(e), .. } = event {
                host.log(format_args!("turn ended with {e}"));
            }
        })
        .panel(
            PANEL,
            |key, host| {
                if key.key == Key::Rune && key.text.as_deref() == Some("x") {
                    host.close_panel(PANEL);
                    return;
                }
                let typed = match &key.text {
                    Some(text) => format!("{:?} {text}", key.key),
                    None => format!("{:?}", key.key),
                };
                host.render_panel(&panel(&["one", "two", &typed]));
            },
            |host| host.notify(NotifyLevel::Info, "panel closed by the user"),
        )
        .on_hello(|ext, info| {
            let about = format!(
                "{} {}/{} in {}",
                info.zot_version,
                info.provider,
                info.model,
                info.cwd.display()
            );
            ext.command("where", "registered in on_hello", move |_, _| {
                Response::display(about.clone())
            })
        })
        .run()
}

fn panel(lines: &[&str]) -> Panel {
    Panel::new(PANEL)
        .title("Probe")
        .lines(lines.iter().copied())
        .footer("x closes")
}

/// Appends the event to `<data_dir>/events.jsonl`.
fn record(event: &Event, host: &Host) {
    let path = host.info().data_dir.join("events.jsonl");
    let line = serde_json_line(event);
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        host.log(format_args!("cannot record to {}: {e}", path.display()));
    }
}

fn serde_json_line(event: &Event) -> String {
    let mut line = zot_ext::serde_json::to_value(event)
        .unwrap_or(Value::Null)
        .to_string();
    line.push('\n');
    line
}
