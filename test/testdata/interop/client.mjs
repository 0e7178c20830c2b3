// The official TypeScript ACP SDK as the editor: it starts `garuda acp` (argv[2]) in the project (argv[3]) and runs
// initialize, session/new, a prompt with an edit that asks (answered "once"), a prompt whose sleep is cancelled,
// and session/set_mode; then it starts a second `garuda acp`, as after a restart of the editor, and runs
// session/list, session/load (the replay comes before the answer) and session/close. It prints one JSON summary
// line for the Go test to check.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [garuda, root] = process.argv.slice(2);
const child = spawn(garuda, ["acp"], { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const updates = [];
const permissions = [];
let onUpdate = () => {};

const app = acp
  .client({ name: "garuda-interop" })
  .onRequest("session/request_permission", ({ params }) => {
    permissions.push(params);
    return { outcome: { outcome: "selected", optionId: "once" } };
  })
  .onNotification("session/update", ({ params }) => {
    updates.push(params);
    onUpdate(params);
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const summary = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true, auth: { terminal: true } },
  });
  const session = await ctx.request("session/new", { cwd: root, mcpServers: [] });
  const sessionId = session.sessionId;
  const edit = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit a.txt" }] });

  const sleeping = new Promise((resolve) => {
    onUpdate = (u) => {
      if (u.update.sessionUpdate === "tool_call" && u.update.toolCallId === "call_sleep") resolve();
    };
  });
  const pending = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "sleep" }] });
  await sleeping;
  await new Promise((r) => setTimeout(r, 300)); // let the command start; the cancel is tested either way
  await ctx.notify("session/cancel", { sessionId });
  const cancelled = await pending;

  const mode = await ctx.request("session/set_mode", { sessionId, modeId: "plan" });
  return { init, session, edit, cancelled, mode, permissions, updates };
});
child.stdin.end();
summary.exit = await exited;

// The restart: a new agent, the same home and project.
const child2 = spawn(garuda, ["acp"], { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
const exited2 = new Promise((resolve) => child2.on("exit", (code, signal) => resolve({ code, signal })));
const replay = [];
let loading = false;
const app2 = acp
  .client({ name: "garuda-interop" })
  .onRequest("session/request_permission", () => ({ outcome: { outcome: "cancelled" } }))
  .onNotification("session/update", ({ params }) => {
    if (loading) replay.push(params);
  });
const stream2 = acp.ndJsonStream(Writable.toWeb(child2.stdin), Readable.toWeb(child2.stdout));
summary.reopened = await app2.connectWith(stream2, async (ctx) => {
  const init = await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const list = await ctx.request("session/list", { cwd: root });
  const sessionId = summary.session.sessionId;
  loading = true;
  const load = await ctx.request("session/load", { sessionId, cwd: root, mcpServers: [] });
  loading = false;
  const replayedBeforeAnswer = replay.length;
  const close = await ctx.request("session/close", { sessionId });
  let closeAgain = null;
  try {
    await ctx.request("session/close", { sessionId });
  } catch (e) {
    closeAgain = { code: e.code, message: e.message };
  }
  return { init, list, load, replayedBeforeAnswer, replay, close, closeAgain };
});
child2.stdin.end();
summary.reopened.exit = await exited2;
process.stdout.write(JSON.stringify(summary) + "\n");
