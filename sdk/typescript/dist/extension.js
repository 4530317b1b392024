/**
 * `Extension`: registrations, the handshake, the read loop and dispatch.
 */
import { format, isDeepStrictEqual } from "node:util";
import { LineSplitter } from "./lines.js";
import { encodeFrame, } from "./wire.js";
const DEFAULT_CAPABILITIES = ["commands", "tools", "events", "panels"];
const COMMAND_NAME = /^[A-Za-z0-9_-]+$/;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const LEVELS = ["info", "success", "warn", "error"];
const ACTIONS = ["prompt", "insert", "display", "open_panel", "noop"];
/**
 * An extension-owned panel (TUI only). Get one with `ext.panel(id, handlers)`,
 * open it by returning `panel.open(content)` from a command, then push frames
 * with `render` while it is open.
 */
export class Panel {
    ext;
    id;
    handlers;
    openNow = false;
    /** @internal Serialises this panel's key and close handlers. */
    chain = Promise.resolve();
    /** Use `ext.panel(id, handlers)` rather than constructing panels directly. */
    constructor(ext, id, handlers = {}) {
        this.ext = ext;
        this.id = id;
        this.handlers = handlers;
    }
    /** Whether the panel is open as far as this extension knows. */
    get isOpen() {
        return this.openNow;
    }
    /** A command response that opens this panel with its first frame. */
    open(content = {}) {
        return { action: "open_panel", openPanel: { id: this.id, ...content } };
    }
    /** Pushes a new frame; returns false (and sends nothing) when the panel is not open. */
    render(content) {
        if (!this.openNow)
            return false;
        this.ext.renderPanel(this.id, content);
        return true;
    }
    /** Closes the panel (nothing is sent when it is not open). */
    close() {
        if (!this.openNow)
            return;
        this.openNow = false;
        this.ext.closePanel(this.id);
    }
    /** @internal */
    markOpen(open) {
        this.openNow = open;
    }
}
/**
 * A zot extension.
 *
 * ```ts
 * const ext = new Extension("hello", "1.0.0");
 * ext.command("hello", "say hi", async () => prompt("Greet me."));
 * await ext.run();
 * ```
 */
export class Extension {
    name;
    version;
    input;
    output;
    stderr;
    capabilities;
    redirectConsole;
    shutdownGraceMs;
    commands = new Map();
    tools = new Map();
    events = new Map();
    interceptors = {
        tool_call: [],
        turn_start: [],
        assistant_message: [],
        before_agent_start: [],
    };
    helloHandlers = [];
    shutdownHandlers = [];
    panels = new Map();
    phase = "idle";
    hostInfo = {
        protocolVersion: 0,
        zotVersion: "",
        provider: "",
        model: "",
        cwd: "",
        extensionDir: "",
        dataDir: "",
    };
    /** Runtime frames written before `ready`, sent right after it. */
    outbox = [];
    /** Host frames that arrived before `ready`, handled right after it. */
    early = [];
    subscribedEvents = new Set();
    subscribedIntercepts = new Set();
    eventChain = Promise.resolve();
    splitter;
    finish;
    fail;
    detach = [];
    restoreConsole;
    constructor(name, version = "", options = {}) {
        if (typeof name !== "string" || name.trim() === "") {
            throw new TypeError("Extension: name must be a non-empty string (the manifest's name)");
        }
        this.name = name;
        this.version = version;
        this.input = options.input ?? process.stdin;
        this.output = options.output ?? process.stdout;
        this.stderr = options.stderr ?? process.stderr;
        this.capabilities = options.capabilities ?? DEFAULT_CAPABILITIES;
        this.redirectConsole = options.redirectConsole ?? this.output === process.stdout;
        this.shutdownGraceMs = options.shutdownGraceMs ?? 1500;
        this.splitter = new LineSplitter(undefined, (bytes) => this.log(`dropped a host frame of ${bytes} bytes (too long)`));
        if (this.redirectConsole) {
            // From now on (not just from run()): nothing may reach stdout before hello.
            const saved = { log: console.log, info: console.info, debug: console.debug };
            const toStderr = (...args) => {
                this.stderr.write(format(...args) + "\n");
            };
            console.log = console.info = console.debug = toStderr;
            this.restoreConsole = () => Object.assign(console, saved);
        }
    }
    // ---------------------------------------------------------------- host info
    /** What the host said in `hello_ack` (empty until then; complete inside `onHello`). */
    get host() {
        return this.hostInfo;
    }
    /**
     * Runs after `hello_ack`, before registrations are announced: registrations
     * made here (for example depending on `host.cwd`) are sent before `ready`.
     */
    onHello(handler) {
        assertFunction(handler, "onHello handler");
        this.helloHandlers.push(handler);
        return this;
    }
    /** Runs when the host asks us to shut down, before `shutdown_ack` (bounded by `shutdownGraceMs`). */
    onShutdown(handler) {
        assertFunction(handler, "onShutdown handler");
        this.shutdownHandlers.push(handler);
        return this;
    }
    // ---------------------------------------------------------------- registration
    /**
     * Registers a slash command. The handler gets everything after the name
     * (trimmed) and returns a `Response` (`prompt`, `insert`, `display`,
     * `openPanel`, `noop`, `error`), a string to display, or nothing.
     */
    command(name, description, handler) {
        if (typeof name !== "string" || !COMMAND_NAME.test(name)) {
            throw new TypeError(`command name ${JSON.stringify(name)} is invalid: use letters, digits, '_' and '-' (no leading '/')`);
        }
        assertFunction(handler, `handler of command ${name}`);
        const key = name.toLowerCase();
        if (this.commands.has(key)) {
            throw new Error(`command ${JSON.stringify(name)} is already registered (names are case-insensitive)`);
        }
        const entry = { name, description: description ?? "", handler };
        this.commands.set(key, entry);
        if (this.isAnnounced())
            this.sendRegisterCommand(entry);
        return this;
    }
    /**
     * Registers a tool the model can call. `schema` is a JSON Schema object for
     * the arguments. The handler returns a string, content blocks, or a
     * `ToolResult` (`isError`, `activateTools`); a throw becomes an error result.
     */
    tool(name, description, schema, handler, options = {}) {
        if (typeof name !== "string" || !TOOL_NAME.test(name)) {
            throw new TypeError(`tool name ${JSON.stringify(name)} is invalid: 1-64 letters, digits, '_' or '-'`);
        }
        if (!isPlainObject(schema)) {
            throw new TypeError(`schema of tool ${name} must be a JSON Schema object`);
        }
        assertFunction(handler, `handler of tool ${name}`);
        if (this.tools.has(name)) {
            throw new Error(`tool ${JSON.stringify(name)} is already registered`);
        }
        const entry = {
            name,
            description: description ?? "",
            schema,
            deferred: options.deferred === true,
            handler: handler,
        };
        this.tools.set(name, entry);
        if (this.isAnnounced())
            this.sendRegisterTool(entry);
        return this;
    }
    on(event, handler) {
        if (typeof event !== "string" || event === "")
            throw new TypeError("on: event name must be a string");
        assertFunction(handler, `handler of event ${event}`);
        const list = this.events.get(event) ?? [];
        list.push(handler);
        this.events.set(event, list);
        this.resubscribe();
        return this;
    }
    /**
     * Intercepts tool calls before they run: return nothing / `allow()`,
     * `block(reason)` (the model sees `reason`), or `rewrite(args)`. Several
     * interceptors chain: the first block wins, rewrites feed the next one.
     * A throw allows the call (the host's fail-open rule).
     */
    interceptToolCall(handler) {
        return this.addInterceptor("tool_call", handler);
    }
    /** Intercepts each model call of a turn: nothing / `allow()` or `block(reason)`. */
    interceptTurnStart(handler) {
        return this.addInterceptor("turn_start", handler);
    }
    /**
     * Intercepts the assistant's final text: nothing / `allow()`,
     * `block(reason)` to hide it, or `replaceText(text)` to change what the user sees.
     */
    interceptAssistantMessage(handler) {
        return this.addInterceptor("assistant_message", handler);
    }
    /**
     * Replaces the complete system prompt before the first model call: return
     * the new prompt ("" removes it) or nothing to keep it.
     */
    beforeAgentStart(handler) {
        return this.addInterceptor("before_agent_start", handler);
    }
    /**
     * The panel with this id, created on first use; `handlers` (when given)
     * replace its key and close handlers.
     */
    panel(id, handlers) {
        if (typeof id !== "string" || id === "")
            throw new TypeError("panel id must be a non-empty string");
        let panel = this.panels.get(id);
        if (!panel) {
            panel = new Panel(this, id);
            this.panels.set(id, panel);
        }
        if (handlers)
            panel.handlers = handlers;
        return panel;
    }
    /** Go-SDK style: key and close handlers for a panel id. */
    onPanelKey(panelId, onKey, onClose) {
        this.panel(panelId, { onKey, onClose });
        return this;
    }
    // ---------------------------------------------------------------- runtime calls
    /** A one-shot note in zot (`ext_notify` in RPC mode). */
    notify(level, message) {
        if (!LEVELS.includes(level)) {
            throw new TypeError(`notify level must be one of ${LEVELS.join(", ")} (got ${JSON.stringify(level)})`);
        }
        this.sendRuntime({ type: "notify", level, message: String(message) });
    }
    /** Removes every note this extension pushed. */
    clearNotes() {
        this.sendRuntime({ type: "clear_notes" });
    }
    /** Submits `text` as a user prompt in the interactive host (ignored elsewhere). */
    submit(text) {
        this.sendRuntime({ type: "submit", text: String(text) });
    }
    /** Pushes a frame for an open panel (`Panel.render` checks that it is open). */
    renderPanel(panelId, content) {
        this.sendRuntime({ type: "panel_render", panel_id: panelId, ...wirePanelContent(content) });
    }
    /** Closes a panel. */
    closePanel(panelId) {
        this.panels.get(panelId)?.markOpen(false);
        this.sendRuntime({ type: "panel_close", panel_id: panelId });
    }
    /** Writes `[name] message` to stderr (the host's log for this extension). */
    log(...args) {
        try {
            this.stderr.write(`[${this.name}] ${format(...args)}\n`);
        }
        catch {
            // Nowhere left to report to.
        }
    }
    // ---------------------------------------------------------------- run
    /**
     * Speaks the protocol until the host closes stdin or sends `shutdown`:
     * sends `hello`, waits for `hello_ack`, runs `onHello` handlers, announces
     * every registration and one `subscribe`, sends `ready`, then dispatches
     * frames. Resolves when done; rejects only when the host goes away before
     * `hello_ack`.
     */
    run() {
        if (this.phase !== "idle")
            return Promise.reject(new Error("run() was already called"));
        this.phase = "handshake";
        return new Promise((resolve, reject) => {
            this.finish = resolve;
            this.fail = reject;
            this.attach();
            if (this.input.isTTY) {
                this.log("this is a zot extension: it speaks JSON lines to zot; run it with `zot --ext <dir>`");
            }
            this.write({
                type: "hello",
                name: this.name,
                ...(this.version ? { version: this.version } : {}),
                capabilities: [...this.capabilities],
            });
        });
    }
    /** After `hello_ack`: `onHello`, registrations, `ready`, then the frames that waited. */
    async start(ack) {
        this.hostInfo = hostInfo(ack);
        this.phase = "registering";
        for (const handler of this.helloHandlers) {
            try {
                await handler(this.hostInfo);
            }
            catch (err) {
                this.log("onHello handler failed:", describeError(err));
            }
        }
        if (this.phase !== "registering")
            return; // the host left meanwhile
        this.announce();
        this.write({ type: "ready" });
        this.phase = "running";
        const outbox = this.outbox;
        this.outbox = [];
        for (const frame of outbox)
            this.write(frame);
        const early = this.early;
        this.early = [];
        for (const frame of early)
            this.dispatch(frame);
    }
    // ---------------------------------------------------------------- internals
    isAnnounced() {
        return this.phase === "running";
    }
    addInterceptor(kind, handler) {
        assertFunction(handler, `${kind} interceptor`);
        this.interceptors[kind].push(handler);
        this.resubscribe();
        return this;
    }
    announce() {
        for (const entry of this.commands.values())
            this.sendRegisterCommand(entry);
        for (const entry of this.tools.values())
            this.sendRegisterTool(entry);
        const events = [...this.events.keys()];
        const intercept = Object.keys(this.interceptors).filter((k) => this.interceptors[k].length > 0);
        if (events.length > 0 || intercept.length > 0) {
            this.write({
                type: "subscribe",
                ...(events.length > 0 ? { events } : {}),
                ...(intercept.length > 0 ? { intercept } : {}),
            });
        }
        events.forEach((e) => this.subscribedEvents.add(e));
        intercept.forEach((i) => this.subscribedIntercepts.add(i));
    }
    /** After `ready`, subscribes to kinds that gained their first handler. */
    resubscribe() {
        if (!this.isAnnounced())
            return;
        const events = [...this.events.keys()].filter((e) => !this.subscribedEvents.has(e));
        const intercept = Object.keys(this.interceptors).filter((k) => this.interceptors[k].length > 0 && !this.subscribedIntercepts.has(k));
        if (events.length === 0 && intercept.length === 0)
            return;
        events.forEach((e) => this.subscribedEvents.add(e));
        intercept.forEach((i) => this.subscribedIntercepts.add(i));
        this.write({
            type: "subscribe",
            ...(events.length > 0 ? { events } : {}),
            ...(intercept.length > 0 ? { intercept } : {}),
        });
    }
    sendRegisterCommand(entry) {
        this.write({
            type: "register_command",
            name: entry.name,
            ...(entry.description ? { description: entry.description } : {}),
        });
    }
    sendRegisterTool(entry) {
        this.write({
            type: "register_tool",
            name: entry.name,
            ...(entry.description ? { description: entry.description } : {}),
            schema: entry.schema,
            ...(entry.deferred ? { deferred: true } : {}),
        });
    }
    /** One-way frames: held back until `ready`, dropped once stopped. */
    sendRuntime(frame) {
        if (this.phase === "running")
            this.write(frame);
        else if (this.phase !== "stopped")
            this.outbox.push(frame);
    }
    write(frame) {
        if (this.phase === "stopped" && frame.type !== "shutdown_ack")
            return;
        try {
            this.output.write(encodeFrame(frame));
        }
        catch (err) {
            this.log("cannot write to the host:", describeError(err));
            this.hostGone(`cannot write to the host (${errorMessage(err)})`);
        }
    }
    attach() {
        const onData = (chunk) => {
            for (const line of this.splitter.push(chunk))
                this.handleLine(line);
        };
        const onEnd = () => {
            const last = this.splitter.end();
            if (last !== undefined)
                this.handleLine(last);
            this.hostGone("the host closed stdin");
        };
        const onError = (err) => {
            this.log("reading from the host failed:", describeError(err));
            this.hostGone(`reading from the host failed: ${err.message}`);
        };
        const onOutputError = (err) => {
            this.log("writing to the host failed:", describeError(err));
            this.hostGone(`writing to the host failed: ${err.message}`);
        };
        this.input.on("data", onData);
        this.input.on("end", onEnd);
        this.input.on("error", onError);
        this.output.on?.("error", onOutputError);
        this.input.resume?.();
        this.detach.push(() => {
            this.input.removeListener("data", onData);
            this.input.removeListener("end", onEnd);
            this.input.removeListener("error", onError);
            this.output.removeListener?.("error", onOutputError);
        });
    }
    /** EOF or a broken pipe: before `hello_ack` that is an error, after it the end. */
    hostGone(reason) {
        if (this.phase === "handshake") {
            this.stop(new Error(`${this.name}: ${reason} before hello_ack (is this running under zot?)`));
        }
        else {
            this.stop();
        }
    }
    /** Ends the run: detaches from the streams and settles `run()`. */
    stop(error) {
        if (this.phase === "stopped")
            return;
        this.phase = "stopped";
        for (const undo of this.detach.splice(0))
            undo();
        this.restoreConsole?.();
        this.restoreConsole = undefined;
        if (this.input === process.stdin) {
            this.input.pause?.();
            this.input.destroy?.();
        }
        if (error)
            this.fail?.(error);
        else
            this.finish?.();
    }
    handleLine(line) {
        if (this.phase === "stopped")
            return;
        if (line.trim() === "")
            return;
        let frame;
        try {
            frame = JSON.parse(line);
        }
        catch (err) {
            this.log(`malformed frame from the host (${describeError(err)}); skipped: ${clip(line)}`);
            return;
        }
        if (!isPlainObject(frame) || typeof frame.type !== "string") {
            this.log(`frame without a "type" from the host; skipped: ${clip(line)}`);
            return;
        }
        const typed = frame;
        if (typed.type === "hello_ack") {
            if (this.phase === "handshake") {
                this.start(typed).catch((err) => {
                    this.log("start-up failed:", describeError(err));
                    this.stop(err instanceof Error ? err : new Error(String(err)));
                });
            }
            else {
                this.log("unexpected second hello_ack; ignored");
            }
            return;
        }
        if (typed.type === "shutdown") {
            void this.shutdown();
            return;
        }
        if (this.phase !== "running") {
            this.early.push(typed);
            return;
        }
        this.dispatch(typed);
    }
    dispatch(frame) {
        switch (frame.type) {
            case "command_invoked":
                return this.track(() => this.onCommand(frame));
            case "tool_call":
                return this.track(() => this.onToolCall(frame));
            case "event_intercept":
                return this.track(() => this.onIntercept(frame));
            case "event": {
                this.eventChain = this.eventChain.then(() => this.onEvent(frame));
                return;
            }
            case "panel_key":
            case "panel_close":
                return this.onPanelFrame(frame);
            default:
                this.log(`unknown frame type ${JSON.stringify(frame.type)} from the host; skipped`);
        }
    }
    /** Runs a handler concurrently with everything else. */
    track(work) {
        work().catch((err) => this.log("internal error:", describeError(err)));
    }
    async shutdown() {
        if (this.phase === "stopped")
            return;
        const wasRunning = this.phase === "running";
        // Stop reading now; what is queued still gets its chance below.
        for (const undo of this.detach.splice(0))
            undo();
        if (wasRunning) {
            const work = (async () => {
                await this.eventChain;
                for (const handler of this.shutdownHandlers) {
                    try {
                        await handler();
                    }
                    catch (err) {
                        this.log("onShutdown handler failed:", describeError(err));
                    }
                }
            })();
            let timer;
            const grace = new Promise((resolve) => {
                timer = setTimeout(resolve, this.shutdownGraceMs);
            });
            await Promise.race([work, grace]);
            clearTimeout(timer);
        }
        // An EOF may have ended the run while we waited.
        if (this.phase === "stopped")
            return;
        this.write({ type: "shutdown_ack" });
        this.stop();
    }
    async onCommand(frame) {
        const id = stringField(frame, "id");
        const name = stringField(frame, "name");
        if (id === undefined || name === undefined) {
            this.log("command_invoked without id or name; skipped");
            return;
        }
        const args = stringField(frame, "args") ?? "";
        const entry = this.commands.get(name.toLowerCase());
        let reply;
        if (!entry) {
            reply = { type: "command_response", id, action: "noop", error: `no handler for /${name}` };
        }
        else {
            try {
                const result = await entry.handler(args, { id, name: entry.name });
                reply = commandResponse(id, result);
            }
            catch (err) {
                this.log(`/${entry.name} failed:`, describeError(err));
                reply = { type: "command_response", id, action: "noop", error: errorMessage(err) };
            }
        }
        this.write(reply);
        if (reply.action === "open_panel" && reply.open_panel && !reply.error) {
            this.panel(reply.open_panel.id).markOpen(true);
        }
    }
    async onToolCall(frame) {
        const id = stringField(frame, "id");
        const name = stringField(frame, "name");
        if (id === undefined || name === undefined) {
            this.log("tool_call without id or name; skipped");
            return;
        }
        const entry = this.tools.get(name);
        let reply;
        if (!entry) {
            reply = errorToolResult(id, `no handler for tool ${JSON.stringify(name)}`);
        }
        else {
            const args = isPlainObject(frame.args) ? frame.args : {};
            try {
                const result = await entry.handler(args, { id, name: entry.name });
                reply = toolResultFrame(id, result);
            }
            catch (err) {
                this.log(`tool ${entry.name} failed:`, describeError(err));
                reply = errorToolResult(id, errorMessage(err));
            }
        }
        this.write(reply);
    }
    async onIntercept(frame) {
        const id = stringField(frame, "id");
        if (id === undefined) {
            this.log("event_intercept without id; skipped");
            return;
        }
        const kind = frame.event;
        let reply = { type: "event_intercept_response", id };
        try {
            switch (kind) {
                case "tool_call":
                    reply = await this.interceptTool(id, frame);
                    break;
                case "turn_start":
                    reply = await this.interceptTurn(id, frame);
                    break;
                case "assistant_message":
                    reply = await this.interceptMessage(id, frame);
                    break;
                case "before_agent_start":
                    reply = await this.interceptPrompt(id, frame);
                    break;
                default:
                    this.log(`event_intercept for unknown event ${JSON.stringify(kind)}; allowing`);
            }
        }
        catch (err) {
            this.log(`${String(kind)} interceptor failed (allowing):`, describeError(err));
            reply = { type: "event_intercept_response", id };
        }
        this.write(reply);
    }
    async interceptTool(id, frame) {
        const original = isPlainObject(frame.tool_args) ? frame.tool_args : {};
        let current = original;
        const toolId = stringField(frame, "tool_id") ?? "";
        const toolName = stringField(frame, "tool_name") ?? "";
        for (const handler of this.interceptors.tool_call) {
            const decision = await handler({ toolId, toolName, args: current });
            if (!decision)
                continue;
            if (decision.block)
                return blockReply(id, decision.reason);
            if (decision.modifiedArgs !== undefined) {
                if (isPlainObject(decision.modifiedArgs))
                    current = decision.modifiedArgs;
                else
                    this.log(`tool_call interceptor: modifiedArgs must be a plain object; ignored`);
            }
        }
        const reply = { type: "event_intercept_response", id };
        if (!isDeepStrictEqual(current, original))
            reply.modified_args = current;
        return reply;
    }
    async interceptTurn(id, frame) {
        const step = typeof frame.step === "number" ? frame.step : 0;
        for (const handler of this.interceptors.turn_start) {
            const decision = await handler(step);
            if (decision?.block)
                return blockReply(id, decision.reason);
        }
        return { type: "event_intercept_response", id };
    }
    async interceptMessage(id, frame) {
        const original = stringField(frame, "text") ?? "";
        let current = original;
        for (const handler of this.interceptors.assistant_message) {
            const decision = await handler(current);
            if (!decision)
                continue;
            if (decision.block)
                return blockReply(id, decision.reason);
            if (typeof decision.replaceText === "string" && decision.replaceText !== "") {
                current = decision.replaceText;
            }
        }
        const reply = { type: "event_intercept_response", id };
        if (current !== original)
            reply.replace_text = current;
        return reply;
    }
    async interceptPrompt(id, frame) {
        let prompt = stringField(frame, "system_prompt") ?? "";
        let replaced = false;
        for (const handler of this.interceptors.before_agent_start) {
            const result = await handler({
                sessionId: stringField(frame, "session_id") ?? "",
                agentRunId: stringField(frame, "agent_run_id") ?? "",
                cwd: stringField(frame, "cwd") ?? "",
                provider: stringField(frame, "provider") ?? "",
                model: stringField(frame, "model") ?? "",
                systemPrompt: prompt,
            });
            if (result === undefined || result === null)
                continue;
            if (typeof result !== "string") {
                this.log("beforeAgentStart handler returned a non-string; ignored");
                continue;
            }
            prompt = result;
            replaced = true;
        }
        const reply = { type: "event_intercept_response", id };
        if (replaced)
            reply.system_prompt = prompt;
        return reply;
    }
    async onEvent(frame) {
        const name = frame.event;
        if (typeof name !== "string") {
            this.log("event frame without an event name; skipped");
            return;
        }
        const handlers = this.events.get(name);
        if (!handlers || handlers.length === 0)
            return;
        const event = camelEvent(frame);
        for (const handler of handlers) {
            try {
                await handler(event);
            }
            catch (err) {
                this.log(`${name} handler failed:`, describeError(err));
            }
        }
    }
    onPanelFrame(frame) {
        const panelId = stringField(frame, "panel_id");
        if (panelId === undefined) {
            this.log(`${frame.type} without panel_id; skipped`);
            return;
        }
        const panel = this.panels.get(panelId);
        if (!panel) {
            this.log(`${frame.type} for unknown panel ${JSON.stringify(panelId)}; skipped`);
            return;
        }
        let work;
        if (frame.type === "panel_close") {
            panel.markOpen(false);
            work = () => panel.handlers.onClose?.(panel);
        }
        else {
            const key = stringField(frame, "key") ?? "";
            const text = stringField(frame, "text");
            const event = { panelId, key: key, ...(text !== undefined ? { text } : {}) };
            work = () => panel.handlers.onKey?.(event, panel);
        }
        panel.chain = panel.chain.then(async () => {
            try {
                await work();
            }
            catch (err) {
                this.log(`panel ${panelId} ${frame.type} handler failed:`, describeError(err));
            }
        });
    }
}
// ---------------------------------------------------------------- conversions
function hostInfo(frame) {
    return {
        protocolVersion: typeof frame.protocol_version === "number" ? frame.protocol_version : 0,
        zotVersion: stringField(frame, "zot_version") ?? "",
        provider: stringField(frame, "provider") ?? "",
        model: stringField(frame, "model") ?? "",
        cwd: stringField(frame, "cwd") ?? "",
        extensionDir: stringField(frame, "extension_dir") ?? "",
        dataDir: stringField(frame, "data_dir") ?? stringField(frame, "extension_dir") ?? "",
    };
}
function commandResponse(id, result) {
    if (result === undefined || result === null)
        return { type: "command_response", id, action: "noop" };
    if (typeof result === "string")
        return { type: "command_response", id, action: "display", display: result };
    if (!isPlainObject(result)) {
        throw new TypeError(`command handler returned ${typeof result}; expected a Response, a string or nothing`);
    }
    const r = result;
    const action = (r.action ?? "noop");
    if (!ACTIONS.includes(action)) {
        throw new TypeError(`command response has unknown action ${JSON.stringify(r.action)}`);
    }
    const reply = { type: "command_response", id, action };
    if (r.prompt !== undefined)
        reply.prompt = String(r.prompt);
    if (r.insert !== undefined)
        reply.insert = String(r.insert);
    if (r.display !== undefined)
        reply.display = String(r.display);
    if (r.openPanel !== undefined) {
        if (!isPlainObject(r.openPanel) || typeof r.openPanel.id !== "string" || r.openPanel.id === "") {
            throw new TypeError("openPanel needs a non-empty id");
        }
        reply.open_panel = { id: r.openPanel.id, ...wirePanelContent(r.openPanel) };
    }
    if (action === "open_panel" && !reply.open_panel) {
        throw new TypeError('action "open_panel" needs openPanel (use openPanel(id, content))');
    }
    if (r.error !== undefined && r.error !== "")
        reply.error = String(r.error);
    return reply;
}
function wirePanelContent(content) {
    const out = {};
    if (content.title !== undefined)
        out.title = String(content.title);
    if (content.lines !== undefined) {
        if (!Array.isArray(content.lines))
            throw new TypeError("panel lines must be an array of strings");
        out.lines = content.lines.map(String);
    }
    if (content.footer !== undefined)
        out.footer = String(content.footer);
    return out;
}
function toolResultFrame(id, result) {
    if (result === undefined || result === null)
        return { type: "tool_result", id, content: [] };
    if (typeof result === "string")
        return { type: "tool_result", id, content: [{ type: "text", text: result }] };
    if (Array.isArray(result))
        return { type: "tool_result", id, content: result.map(wireBlock) };
    if (!isPlainObject(result)) {
        throw new TypeError(`tool handler returned ${typeof result}; expected a ToolResult, a string or blocks`);
    }
    const content = typeof result.content === "string" ? [{ type: "text", text: result.content }]
        : Array.isArray(result.content) ? result.content.map(wireBlock)
            : result.content === undefined ? []
                : (() => {
                    throw new TypeError("ToolResult.content must be an array of blocks or a string");
                })();
    const reply = { type: "tool_result", id, content };
    if (result.isError)
        reply.is_error = true;
    if (result.activateTools !== undefined) {
        if (!Array.isArray(result.activateTools) || !result.activateTools.every((t) => typeof t === "string")) {
            throw new TypeError("ToolResult.activateTools must be an array of tool names");
        }
        if (result.activateTools.length > 0)
            reply.activate_tools = [...result.activateTools];
    }
    return reply;
}
function wireBlock(block) {
    if (isPlainObject(block) && block.type === "text" && typeof block.text === "string") {
        return { type: "text", text: block.text };
    }
    if (isPlainObject(block) && block.type === "image") {
        const loose = block;
        const mime = loose.mimeType ?? loose.mime_type;
        if (typeof mime === "string" && typeof loose.data === "string") {
            return { type: "image", mime_type: mime, data: loose.data };
        }
    }
    throw new TypeError(`invalid content block ${clip(JSON.stringify(block) ?? String(block))}`);
}
function errorToolResult(id, message) {
    return { type: "tool_result", id, content: [{ type: "text", text: message }], is_error: true };
}
function blockReply(id, reason) {
    const reply = { type: "event_intercept_response", id, block: true };
    if (reason !== undefined && reason !== "")
        reply.reason = String(reason);
    return reply;
}
/** `{"type":"event","event":"tool_call","tool_args":…}` → `{event:"tool_call", toolArgs:…}`. */
function camelEvent(frame) {
    const out = { event: String(frame.event) };
    for (const [key, value] of Object.entries(frame)) {
        if (key === "type" || key === "event")
            continue;
        out[key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())] = value;
    }
    return out;
}
// ---------------------------------------------------------------- small utilities
function isPlainObject(value) {
    if (value === null || typeof value !== "object" || Array.isArray(value))
        return false;
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null;
}
function stringField(frame, key) {
    const value = frame[key];
    return typeof value === "string" ? value : undefined;
}
function assertFunction(value, what) {
    if (typeof value !== "function")
        throw new TypeError(`${what} must be a function`);
}
function errorMessage(err) {
    if (err instanceof Error)
        return err.message || err.name;
    return String(err);
}
function describeError(err) {
    if (err instanceof Error)
        return err.stack ?? `${err.name}: ${err.message}`;
    return String(err);
}
function clip(text, max = 200) {
    return text.length > max ? `${text.slice(0, max)}…` : text;
}
