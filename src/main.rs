use std::process::ExitCode;

fn main() -> ExitCode {
    lcp::cli::main()
}
