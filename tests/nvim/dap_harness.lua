-- Appended to debugger/README.md's nvim-dap config by tests/test_debugger_nvim.py: opens the
-- PTX, sets a conditional breakpoint on the store, runs the config, and writes what it saw
-- (the stop's reason, the frame's line, %r5 of the followed thread) to $PTXLS_DAP_OUT.
local out = os.getenv("PTXLS_DAP_OUT")
local result = {}
local function finish()
  local f = io.open(out, "w")
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd("qa!")
end
-- after start-up, when filetype detection is on (it is set up after init.lua)
vim.api.nvim_create_autocmd("VimEnter", { nested = true, callback = function()
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("PTXLS_DAP_PTX")))
  result.filetype = vim.bo.filetype
  vim.api.nvim_win_set_cursor(0, { tonumber(os.getenv("PTXLS_DAP_LINE")), 0 })
  dap.set_breakpoint(os.getenv("PTXLS_DAP_CONDITION"))
  dap.listeners.after.event_stopped["ptxls-test"] = function(session, body)
    result.reason = body.reason
    vim.defer_fn(function()
      local frame = session.current_frame
      result.line = frame and frame.line
      result.frame = frame and frame.name
      session:request("evaluate", { expression = "%r5", frameId = frame and frame.id, context = "repl" },
        function(err, resp)
          result.r5 = resp and resp.result or tostring(err)
          dap.terminate()
          vim.defer_fn(finish, 300)
        end)
    end, 300)
  end
  dap.continue()
  vim.defer_fn(function()
    result.timeout = true
    finish()
  end, 60000)
end })
