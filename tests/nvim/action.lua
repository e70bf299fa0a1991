-- Test-only: loaded after a README Neovim config by tests/test_neovim.py. Once the server is
-- attached it asks for the code actions at PTXLS_ACTION_LINE (0-based), runs the one whose
-- title starts with PTXLS_ACTION_TITLE the way Neovim's code action menu does
-- (workspace/executeCommand), then waits for the server's window/showDocument to open a buffer
-- named like PTXLS_OPENED (a Lua pattern) and records it with the messages the server showed.
-- Only APIs Neovim 0.7 already has are used here.
local out = assert(os.getenv("PTXLS_NVIM_OUT"), "PTXLS_NVIM_OUT is not set")
local action_line = tonumber(os.getenv("PTXLS_ACTION_LINE") or "0")
local title_start = os.getenv("PTXLS_ACTION_TITLE") or ""
local opened_pattern = os.getenv("PTXLS_OPENED") or "$^"
local lines = {}
local source = vim.api.nvim_get_current_buf()

local function finish(extra)
  table.insert(lines, extra)
  vim.fn.writefile(lines, out)
  vim.cmd("qa!")
end

local shown = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, result, ctx, config)
  table.insert(lines, "message:" .. result.type .. ":" .. result.message:gsub("\n", " "))
  return shown(err, result, ctx, config)
end

local function attached()
  if vim.lsp.get_clients then return #vim.lsp.get_clients({ bufnr = source }) > 0 end
  return next(vim.lsp.buf_get_clients(source)) ~= nil
end

local waited = 0
local function wait_for_document()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name:match(opened_pattern) then return finish("opened:" .. name) end
  end
  waited = waited + 1
  if waited > 100 then return finish("opened:") end
  vim.defer_fn(wait_for_document, 100)
end

local function run_action()
  if not attached() then return vim.defer_fn(run_action, 100) end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(source) },
    range = { start = { line = action_line, character = 0 }, ["end"] = { line = action_line, character = 0 } },
    context = { diagnostics = {} },
  }
  vim.lsp.buf_request(source, "textDocument/codeAction", params, function(err, actions)
    if err then return finish("action-error:" .. vim.inspect(err):gsub("\n", " ")) end
    local picked
    for _, a in ipairs(actions or {}) do
      if a.title:sub(1, #title_start) == title_start then picked = a end
    end
    if not picked then return finish("no-action") end
    table.insert(lines, "action:" .. picked.title)
    local command = picked.command
    vim.lsp.buf_request(source, "workspace/executeCommand",
      { command = command.command, arguments = command.arguments },
      function(err2, result)
        if err2 then return finish("command-error:" .. vim.inspect(err2):gsub("\n", " ")) end
        table.insert(lines, "summary:" .. ((result or {}).summary or ""):gsub("\n", " "))
        wait_for_document()
      end)
  end)
end

vim.defer_fn(run_action, 100)
