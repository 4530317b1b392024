mod hooks;
mod providers;
mod sse_props;
mod tool_output;
mod tools;
