export async function render() {}
