//! The command line described for others to read: shell completion scripts
//! (clap_complete) and the manual page (clap_mangen), from the same definition as the
//! flags ([`Cli`]).

use std::io::{self, Write};

use clap::CommandFactory;
use clap_complete::Shell;
use roff::{Roff, bold, roman};

use crate::cli::Cli;

/// The completion script for `shell`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> io::Result<()> {
    // clap_complete panics when a write fails (a closed pipe): it writes to memory,
    // the script is a few kB.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dumpsyms", &mut script);
    out.write_all(&script)
}

/// Writes the command line's description (completions, manual) to standard output;
/// false if it could not be written, unless the reader just stopped reading.
pub fn print(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> bool {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => true,
        Err(e) => {
            eprintln!("dumpsyms: error: standard output: {e}");
            false
        }
    }
}

/// The manual page: clap_mangen's sections, with the commands described in it rather
/// than pointed to as `dumpsyms-man(1)` pages no one installs.
pub fn manual(out: &mut dyn Write) -> io::Result<()> {
    let command = Cli::command();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut commands = Roff::new();
    commands.control("SH", ["COMMANDS"]);
    for sub in command.get_subcommands() {
        // Each positional: its values when it has a fixed set (a shell), else its name.
        let args: String = sub
            .get_positionals()
            .map(|a| {
                let values: Vec<String> = a
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_string())
                    .collect();
                if values.is_empty() {
                    format!(" {}", a.get_id().as_str().to_uppercase())
                } else {
                    format!(" {}", values.join("|"))
                }
            })
            .collect();
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        commands
            .control("TP", [])
            .text([bold(format!("dumpsyms {}", sub.get_name())), roman(args)])
            .text([roman(about)]);
        // The command's own options, indented under it.
        let options: Vec<_> = sub
            .get_arguments()
            .filter(|a| !a.is_positional() && a.get_long().is_some_and(|l| l != "help"))
            .collect();
        if options.is_empty() {
            continue;
        }
        commands.control("RS", []);
        for a in options {
            let mut flag = format!("--{}", a.get_long().unwrap_or_default());
            if a.get_action().takes_values()
                && let Some(names) = a.get_value_names()
            {
                flag.push(' ');
                flag.push_str(&names.join(" "));
            }
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            commands
                .control("TP", [])
                .text([bold(flag)])
                .text([roman(help)]);
        }
        commands.control("RE", []);
    }
    commands.to_writer(out)?;
    man.render_version_section(out)
}
