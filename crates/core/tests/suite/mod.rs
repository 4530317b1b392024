mod hooks;
mod parallel_tools;
mod providers;
mod sse_props;
mod tool_output;
mod tools;
mod validation;
