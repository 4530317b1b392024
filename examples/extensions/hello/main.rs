//! hello: slash commands written with the Rust SDK (`zot-ext`).
//! `/hello [name]` asks the agent for a greeting (a `prompt` answer);
//! `/about` and `/cwd` show notes without calling the model (`display`).

use zot_ext::{Extension, Response};

fn main() -> Result<(), zot_ext::Error> {
    Extension::new("hello", "1.0.0")
        .command("hello", "ask the agent for a greeting", |args, _host| {
            let who = if args.is_empty() { "me" } else { args };
            Response::prompt(format!("Greet {who} in one short sentence."))
        })
        .command(
            "about",
            "show which zot and model this is",
            |_args, host| {
                let info = host.info();
                Response::display(format!(
                    "zot {} with {} / {} (protocol {})",
                    info.zot_version, info.provider, info.model, info.protocol_version
                ))
            },
        )
        // Registered once the host has said where the project is, so the
        // command can close over it; it is still announced before `ready`.
        .on_hello(|ext, host| {
            let cwd = host.cwd.display().to_string();
            if cwd.is_empty() {
                return ext;
            }
            ext.command("cwd", "show the project directory", move |_args, _host| {
                Response::display(cwd.clone())
            })
        })
        .run()
}
