mod providers;
mod tools;
