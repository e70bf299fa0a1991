-- A working Neovim config for ptxls, used headless by tests/test_neovim.py.
-- PTXLS_CMD: the server command (default "ptxls serve"); PTXLS_NVIM_OUT: where the test
-- writes the diagnostics it saw (unset in normal use).
local cmd = vim.split(os.getenv("PTXLS_CMD") or "ptxls serve", " ", { trimempty = true })
vim.filetype.add({ extension = { ptx = "ptx" } })

if vim.lsp.config then -- Neovim >= 0.11
  vim.lsp.config("ptxls", {
    cmd = cmd,
    filetypes = { "ptx", "cuda" },
    root_markers = { ".git" },
    init_options = { ptxls = { debounceMs = 150 } },
  })
  vim.lsp.enable("ptxls")
else -- Neovim 0.7 - 0.10
  vim.api.nvim_create_autocmd("FileType", {
    pattern = { "ptx", "cuda" },
    callback = function(args)
      local id = vim.lsp.start_client({
        name = "ptxls",
        cmd = cmd,
        root_dir = vim.fn.getcwd(),
        init_options = { ptxls = { debounceMs = 150 } },
      })
      if id then vim.lsp.buf_attach_client(args.buf, id) end
    end,
  })
end

local out = os.getenv("PTXLS_NVIM_OUT")
if out then
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    callback = function()
      local diags = vim.diagnostic.get(0)
      if #diags == 0 then return end
      local lines = {}
      for _, d in ipairs(diags) do
        table.insert(lines, string.format("%d:%d:%s:%s", d.lnum + 1, d.col + 1, d.source or "", d.message))
      end
      vim.fn.writefile(lines, out)
      vim.cmd("qa!")
    end,
  })
end
