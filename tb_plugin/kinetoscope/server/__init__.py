"""The TensorBoard door: the plugin's route table (`plugin.py`) over the routes' logic (`routes.py`,
`compare_route.py`), the loading service and its decoder child, and TensorBoard's entry point (`tb_loader.py`)."""
