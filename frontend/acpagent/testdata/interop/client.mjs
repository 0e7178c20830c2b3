// The official TypeScript ACP SDK as the editor: it starts `garuda acp` (argv[2]) in the project (argv[3]) and runs
// initialize, session/new, a prompt with an edit that asks (answered "once"), a prompt whose sleep is cancelled,
// and session/set_mode. It prints one JSON summary line for the Go test to check.
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
process.stdout.write(JSON.stringify(summary) + "\n");
