mod hooks;
mod providers;
mod tools;
