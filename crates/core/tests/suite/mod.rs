mod hooks;
mod providers;
mod sse_props;
mod tools;
